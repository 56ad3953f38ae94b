// Package loginattack drives examples/login-bruteforce.yaml as an
// attacker and as a user would (issue 26's acceptance): a login origin
// that answers 200 to the right password and 401 to any other, and three
// players against a gateway in front of it, each with client sources of
// its own (net.Dialer.LocalAddr on 127.0.0.0/8, which Linux routes over
// loopback) and a TLS stack of its own (one tls.Config, so one
// ClientHello and one JA4 fingerprint, per player):
//
//   - the attacker: Attempts wrong passwords from one address, pausing
//     AttackerPause after the first (so that a refusal's Retry-After tells
//     the penalty, counted from the refusal, from the window, which frees
//     a slot counted from the first failure);
//   - the botnet: Bots addresses sharing one TLS stack, BotAttempts wrong
//     passwords each, taking turns (every address once, then again);
//   - the user: UserTypos wrong passwords, then the right one, then
//     UserLogins-1 more right ones (logins are not failures: more attempts
//     than the per-IP limit, never refused, show that only failures are
//     counted), from an address and a TLS stack of its own.
//
// Requests are sent one after the other, so the counts are exact: with a
// counting rule (count: statuses [401]) charged after each answer, exactly
// the limit reaches the origin before a key is refused. Report.Check
// compares a run with what the example promises. bench/loginattack and
// scripts/login-attack.sh run it against `tollgate serve`; the examples
// package's tests run it against the gateway in process, on the memory
// store and on Redis.
package loginattack

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Scenario names: the X-Scenario header each player sends, by which the
// origin counts what reached it.
const (
	Attacker = "attacker"
	Botnet   = "botnet"
	User     = "user"
)

// Origin is the login application: POST /login with a form field
// password answers 200 when it is Password and 401 otherwise; anything
// else answers 200. It counts the login attempts that reached it, by the
// request's X-Scenario header.
type Origin struct {
	Password string

	mu      sync.Mutex
	reached map[string]int
}

// NewOrigin returns an origin accepting password.
func NewOrigin(password string) *Origin {
	return &Origin{Password: password, reached: map[string]int{}}
}

func (o *Origin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/login" {
		io.WriteString(w, "origin\n")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	pw := ""
	if err := r.ParseForm(); err == nil {
		pw = r.PostForm.Get("password")
	}
	who := r.Header.Get("X-Scenario")
	switch who {
	case Attacker, Botnet, User:
	default:
		who = "other"
	}
	o.mu.Lock()
	o.reached[who]++
	o.mu.Unlock()
	if subtle.ConstantTimeCompare([]byte(pw), []byte(o.Password)) == 1 {
		io.WriteString(w, "welcome\n")
		return
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="login"`)
	w.WriteHeader(http.StatusUnauthorized)
	io.WriteString(w, "wrong password\n")
}

// Reached is how many login attempts of scenario reached the origin.
func (o *Origin) Reached(scenario string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.reached[scenario]
}

// Plan is what the players send. The zero fields take the defaults the
// issue names.
type Plan struct {
	// Target is the gateway's base URL, "https://127.0.0.1:8443".
	Target string
	// Roots verifies the gateway's certificate.
	Roots *x509.CertPool
	// Password is the right password (the origin's).
	Password string
	// Attempts is the attacker's wrong passwords. Default 200.
	Attempts int
	// AttackerPause is the attacker's pause after its first attempt.
	// Default 2s; negative: none.
	AttackerPause time.Duration
	// Bots is the botnet's addresses, 127.0.0.2 and on. Default 50.
	Bots int
	// BotAttempts is each bot's wrong passwords. Default 4.
	BotAttempts int
	// UserTypos is the user's wrong passwords before the right one.
	// Default 2.
	UserTypos int
	// UserLogins is how many times the user then logs in. Default 6: 2
	// typos and 6 logins are 8 attempts, over the per-IP limit of 5 were
	// every attempt counted.
	UserLogins int
	// Timeout bounds each request. Default 10s.
	Timeout time.Duration
}

func (p *Plan) defaults() {
	if p.Attempts == 0 {
		p.Attempts = 200
	}
	if p.Bots == 0 {
		p.Bots = 50
	}
	if p.BotAttempts == 0 {
		p.BotAttempts = 4
	}
	if p.UserTypos == 0 {
		p.UserTypos = 2
	}
	if p.UserLogins == 0 {
		p.UserLogins = 6
	}
	if p.AttackerPause == 0 {
		p.AttackerPause = 2 * time.Second
	}
	if p.Timeout == 0 {
		p.Timeout = 10 * time.Second
	}
}

// The players' addresses: the botnet's are 127.0.0.2 on (at most 200).
var (
	attackerAddr = netip.MustParseAddr("127.0.0.250")
	userAddr     = netip.MustParseAddr("127.0.0.251")
)

func botAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{127, 0, 0, byte(2 + i)}) }

// Attempt is one request a player sent and its answer.
type Attempt struct {
	// Source is the client address it was sent from.
	Source netip.Addr
	// Status is the answer's status code.
	Status int
	// RetryAfter is the answer's Retry-After in seconds, -1 without one.
	RetryAfter int
	// At is when the answer arrived, from the start of the player's run.
	At time.Duration
}

// Outcome is what one player sent and got.
type Outcome struct {
	Name string
	// JA4 is the fingerprint of the player's TLS stack (Fingerprint).
	JA4 string
	// Sources is how many client addresses it sent from.
	Sources int
	// Attempts are its requests, in the order sent.
	Attempts []Attempt
	// Reached is how many of them reached the origin (the origin's count).
	Reached int
}

// Refused is how many of o's attempts were answered 429.
func (o *Outcome) Refused() int {
	n := 0
	for _, a := range o.Attempts {
		if a.Status == http.StatusTooManyRequests {
			n++
		}
	}
	return n
}

// FirstRefusal is the index of o's first 429, -1 when none.
func (o *Outcome) FirstRefusal() int {
	for i, a := range o.Attempts {
		if a.Status == http.StatusTooManyRequests {
			return i
		}
	}
	return -1
}

// SourcesThrough is how many of o's sources had an attempt answered by
// the origin (not 429).
func (o *Outcome) SourcesThrough() int {
	seen := map[netip.Addr]bool{}
	for _, a := range o.Attempts {
		if a.Status != http.StatusTooManyRequests {
			seen[a.Source] = true
		}
	}
	return len(seen)
}

// String is the outcome in one paragraph: what reached the origin, the
// refusals and their Retry-After.
func (o *Outcome) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d attempts from %d address(es), TLS fingerprint %s\n", o.Name, len(o.Attempts), o.Sources, o.JA4)
	statuses := map[int]int{}
	for _, a := range o.Attempts {
		statuses[a.Status]++
	}
	fmt.Fprintf(&b, "  reached the origin: %d; answers:", o.Reached)
	for _, s := range []int{200, 401, 429} {
		if statuses[s] > 0 {
			fmt.Fprintf(&b, " %d×%d", statuses[s], s)
		}
		delete(statuses, s)
	}
	for s, n := range statuses {
		fmt.Fprintf(&b, " %d×%d", n, s)
	}
	b.WriteString("\n")
	if o.Sources > 1 {
		fmt.Fprintf(&b, "  addresses that got an attempt through: %d of %d\n", o.SourcesThrough(), o.Sources)
	}
	if i := o.FirstRefusal(); i >= 0 {
		first, last := o.Attempts[i], o.Attempts[len(o.Attempts)-1]
		fmt.Fprintf(&b, "  first refusal: attempt %d, Retry-After %d s; last: attempt %d, Retry-After %d s, %.3f s later\n",
			i+1, first.RetryAfter, len(o.Attempts), last.RetryAfter, (last.At - first.At).Seconds())
	} else {
		b.WriteString("  never refused\n")
	}
	return b.String()
}

// Report is a whole run.
type Report struct {
	Attacker, Botnet, User Outcome
}

func (r *Report) String() string {
	return r.Attacker.String() + r.Botnet.String() + r.User.String()
}

// Expect is what the example promises.
type Expect struct {
	// PerIP is the per-address limit of failures in a window (5).
	PerIP int
	// PerJA4 is the per-fingerprint limit of failures in a window (20).
	PerJA4 int
	// Penalty is the penalty's length (15m).
	Penalty time.Duration
}

// Check returns what in r breaks e, nothing when the run kept it: the
// attacker's attempts reach the origin exactly up to the per-IP limit,
// then every one is refused with the penalty's Retry-After (counting down
// with the clock, to the second); the botnet's up to the per-JA4 limit,
// then all its addresses are refused the same way, none by its own
// per-IP count; the user is never refused and every attempt reaches the
// origin. The first refusal's Retry-After must be the penalty's (at least
// the penalty less a second): the attacker's pause (Plan.AttackerPause)
// makes a window without a penalty answer less, the window less the
// pause, since its slot frees counted from the first failure.
func (r *Report) Check(e Expect) []string {
	var bad []string
	badf := func(f string, a ...any) { bad = append(bad, fmt.Sprintf(f, a...)) }
	stopped := func(o *Outcome, limit int) {
		want := min(limit, len(o.Attempts))
		if o.Reached != want {
			badf("%s: %d attempts reached the origin, want %d (the limit)", o.Name, o.Reached, want)
		}
		for i, a := range o.Attempts {
			if i < want && a.Status != http.StatusUnauthorized {
				badf("%s: attempt %d answered %d, want the origin's 401", o.Name, i+1, a.Status)
				return
			}
		}
		first := o.FirstRefusal()
		if len(o.Attempts) <= want {
			return
		}
		if first != want {
			badf("%s: first refusal at attempt %d, want %d", o.Name, first+1, want+1)
			return
		}
		penalty := int(e.Penalty / time.Second)
		t0 := o.Attempts[first].At
		for i, a := range o.Attempts[first:] {
			if a.Status != http.StatusTooManyRequests {
				badf("%s: attempt %d answered %d after the penalty began", o.Name, first+i+1, a.Status)
				return
			}
			// The penalty counts down from its start, the first
			// refusal: Retry-After is what is left, rounded up, so at
			// most the penalty and at least what the client's clock
			// says is left, less a second for the rounding and the
			// two clocks' reading of one instant.
			lo := penalty - int((a.At-t0+time.Second-1)/time.Second) - 1
			if a.RetryAfter > penalty || a.RetryAfter < lo {
				badf("%s: attempt %d: Retry-After %d, want the penalty's %d s less the %.3f s since it began",
					o.Name, first+i+1, a.RetryAfter, penalty, (a.At - t0).Seconds())
				return
			}
		}
	}
	stopped(&r.Attacker, e.PerIP)
	stopped(&r.Botnet, e.PerJA4)
	if r.Botnet.Sources > 0 && len(r.Botnet.Attempts)/r.Botnet.Sources >= e.PerIP {
		badf("botnet: %d attempts per address reach the per-IP limit %d: the JA4 rule is not what is shown", len(r.Botnet.Attempts)/r.Botnet.Sources, e.PerIP)
	}
	if r.Botnet.JA4 == r.User.JA4 || r.Attacker.JA4 == r.Botnet.JA4 || r.Attacker.JA4 == r.User.JA4 {
		badf("the players' TLS stacks share a fingerprint (%s, %s, %s): they are not independent", r.Attacker.JA4, r.Botnet.JA4, r.User.JA4)
	}
	if n := r.User.Refused(); n > 0 {
		badf("user: refused %d times", n)
	}
	if r.User.Reached != len(r.User.Attempts) {
		badf("user: %d of %d attempts reached the origin", r.User.Reached, len(r.User.Attempts))
	}
	return bad
}

// Stacks are the players' TLS configurations, verifying with roots: the
// attacker and the botnet offer different TLS 1.2 cipher suites (so
// different JA4 b parts) and ALPN http/1.1; the user is crypto/tls's
// defaults with ALPN h2 (net/http's HTTP/2 client), as a browser's would
// be its own.
func Stacks(roots *x509.CertPool) (attacker, botnet, user *tls.Config) {
	attacker = &tls.Config{
		RootCAs:    roots,
		MinVersion: tls.VersionTLS12,
		CipherSuites: []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		},
		NextProtos: []string{"http/1.1"},
	}
	botnet = &tls.Config{
		RootCAs:    roots,
		MinVersion: tls.VersionTLS12,
		CipherSuites: []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		},
		NextProtos: []string{"http/1.1"},
	}
	user = &tls.Config{RootCAs: roots, NextProtos: []string{"h2", "http/1.1"}}
	return attacker, botnet, user
}

// Client is an HTTP client sending from src with the TLS stack tc (HTTP/2
// when tc offers h2), its connections kept alive.
func Client(src netip.Addr, tc *tls.Config, timeout time.Duration) *http.Client {
	d := &net.Dialer{Timeout: timeout}
	if src.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
	}
	tr := &http.Transport{
		DialContext:         d.DialContext,
		TLSClientConfig:     tc,
		TLSHandshakeTimeout: timeout,
		MaxIdleConnsPerHost: 1,
		ForceAttemptHTTP2:   len(tc.NextProtos) > 0 && tc.NextProtos[0] == "h2",
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}

// Play runs the three players against p.Target, one request after the
// other, and reports what they got, with the origin's counts.
func Play(ctx context.Context, p Plan, o *Origin) (*Report, error) {
	p.defaults()
	if p.Bots > 200 {
		return nil, fmt.Errorf("at most 200 bots, not %d", p.Bots)
	}
	aTLS, bTLS, uTLS := Stacks(p.Roots)
	r := &Report{
		Attacker: Outcome{Name: Attacker, Sources: 1},
		Botnet:   Outcome{Name: Botnet, Sources: p.Bots},
		User:     Outcome{Name: User, Sources: 1},
	}
	var err error
	for _, s := range []struct {
		o  *Outcome
		tc *tls.Config
	}{{&r.Attacker, aTLS}, {&r.Botnet, bTLS}, {&r.User, uTLS}} {
		if s.o.JA4, err = Fingerprint(s.tc); err != nil {
			return nil, fmt.Errorf("%s's fingerprint: %w", s.o.Name, err)
		}
	}

	// The attacker.
	c := Client(attackerAddr, aTLS, p.Timeout)
	start := time.Now()
	for i := range p.Attempts {
		if err := send(ctx, c, p, &r.Attacker, attackerAddr, "wrong-"+strconv.Itoa(i), start); err != nil {
			return nil, err
		}
		if i == 0 && p.AttackerPause > 0 {
			select {
			case <-time.After(p.AttackerPause):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	c.CloseIdleConnections()

	// The botnet: one tls.Config for all, one client per address.
	bots := make([]*http.Client, p.Bots)
	for i := range bots {
		bots[i] = Client(botAddr(i), bTLS, p.Timeout)
	}
	start = time.Now()
	for round := range p.BotAttempts {
		for i, c := range bots {
			if err := send(ctx, c, p, &r.Botnet, botAddr(i), fmt.Sprintf("guess-%d-%d", i, round), start); err != nil {
				return nil, err
			}
		}
	}
	for _, c := range bots {
		c.CloseIdleConnections()
	}

	// The user.
	c = Client(userAddr, uTLS, p.Timeout)
	start = time.Now()
	for i := range p.UserTypos + p.UserLogins {
		pw := p.Password
		if i < p.UserTypos {
			pw = p.Password + "x" // a typo
		}
		if err := send(ctx, c, p, &r.User, userAddr, pw, start); err != nil {
			return nil, err
		}
	}
	c.CloseIdleConnections()

	r.Attacker.Reached = o.Reached(Attacker)
	r.Botnet.Reached = o.Reached(Botnet)
	r.User.Reached = o.Reached(User)
	return r, nil
}

func send(ctx context.Context, c *http.Client, p Plan, o *Outcome, src netip.Addr, password string, start time.Time) error {
	form := url.Values{"user": {"alice"}, "password": {password}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.Target+"/login", strings.NewReader(form))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Scenario", o.Name)
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("%s, attempt %d from %s: %w", o.Name, len(o.Attempts)+1, src, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	ra := -1
	if v := resp.Header.Get("Retry-After"); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			ra = n
		}
	}
	o.Attempts = append(o.Attempts, Attempt{Source: src, Status: resp.StatusCode, RetryAfter: ra, At: time.Since(start)})
	return nil
}

// errFingerprint is returned when the capture server saw no ClientHello.
var errFingerprint = errors.New("no ClientHello seen")
