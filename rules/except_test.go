package rules

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/racebuild"
)

// tight is a policy that refuses the second request of a key.
var tight = []Policy{{Algorithm: "fixed_window", Limit: 1, Window: "1h"}}

// refusedSecond reports whether the second of two requests r is refused
// by e (so: whether r is counted), and whether the first carried
// rate-limit header fields.
func refusedSecond(t *testing.T, e *Engine, r Request) (refused, headers bool) {
	t.Helper()
	first := decide(t, e, r)
	headers = len(first.AppendHeaders(nil)) > 0
	second := decide(t, e, r)
	return second.Outcome == Refused, headers
}

func TestMatchClients(t *testing.T) {
	m := Match{Clients: []string{"192.0.2.7", "10.0.0.0/8", "2001:db8::/32", "::ffff:198.51.100.0/120", " 203.0.113.9 "}}
	tests := []struct {
		ip   string
		want bool
	}{
		{"192.0.2.7", true},
		{"192.0.2.8", false},
		{"10.255.255.255", true},
		{"11.0.0.0", false},
		{"9.255.255.255", false},
		{"2001:db8:ffff::1", true},
		{"2001:db9::1", false},
		{"::ffff:10.1.2.3", true},  // IPv4-mapped: compared as IPv4
		{"::ffff:192.0.2.7", true}, // idem
		{"198.51.100.77", true},    // a mapped prefix is an IPv4 one
		{"::ffff:198.51.101.1", false},
		{"203.0.113.9", true},
		{"::", false},
	}
	var ps problems
	c := compileMatch(m, "match", &ps)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	for _, tt := range tests {
		r := get("/", tt.ip)
		d := decision{e: &Engine{}, req: r, method: r.method, host: HostOnly(r.host), path: r.path}
		if got := c.match(&d); got != tt.want {
			t.Errorf("%s: match %v, want %v", tt.ip, got, tt.want)
		}
	}
	// An unknown peer (a Unix socket) is in no list.
	r := &req{method: "GET", host: "h", path: "/", header: map[string]string{}}
	d := decision{e: &Engine{}, req: r, method: "GET", host: "h", path: "/"}
	if c.match(&d) {
		t.Error("an unknown client matched")
	}
}

// TestClientSetAgainstLinear compares the merged, bisected table with a
// linear scan of the prefixes, on random overlapping prefixes.
func TestClientSetAgainstLinear(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 50; round++ {
		var prefixes []netip.Prefix
		for i := 0; i < 1+rng.IntN(40); i++ {
			if rng.IntN(2) == 0 {
				a := netip.AddrFrom4([4]byte{byte(rng.IntN(4)), byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))})
				prefixes = append(prefixes, netip.PrefixFrom(a, rng.IntN(33)).Masked())
			} else {
				var b [16]byte
				b[0] = byte(rng.IntN(3)) | 0x20
				for j := 1; j < 16; j++ {
					b[j] = byte(rng.IntN(256))
				}
				if rng.IntN(8) == 0 {
					b = [16]byte{}
				}
				prefixes = append(prefixes, netip.PrefixFrom(netip.AddrFrom16(b), rng.IntN(129)).Masked())
			}
		}
		s := newClientSet(prefixes)
		for i := 0; i < 2000; i++ {
			var a netip.Addr
			p := prefixes[rng.IntN(len(prefixes))]
			if rng.IntN(2) == 0 {
				// Near a prefix's edges.
				a = p.Addr()
				for k := rng.IntN(3); k > 0; k-- {
					a = a.Prev()
				}
				if rng.IntN(2) == 0 {
					r := netip.PrefixFrom(p.Addr(), p.Bits())
					last := lastAddr(r)
					a = last
					for k := rng.IntN(3); k > 0; k-- {
						a = a.Next()
					}
				}
			} else if p.Addr().Is4() {
				a = netip.AddrFrom4([4]byte{byte(rng.IntN(4)), byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))})
			} else {
				var b [16]byte
				b[0] = byte(rng.IntN(3)) | 0x20
				for j := 1; j < 16; j++ {
					b[j] = byte(rng.IntN(256))
				}
				a = netip.AddrFrom16(b)
			}
			if !a.IsValid() {
				continue
			}
			want := false
			for _, p := range prefixes {
				want = want || p.Contains(a)
			}
			if got := s.contains(a); got != want {
				t.Fatalf("round %d: %s in %v: %v, want %v", round, a, prefixes, got, want)
			}
		}
	}
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func TestClientSetEdges(t *testing.T) {
	s := newClientSet([]netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("255.255.255.255/32"),
		netip.MustParsePrefix("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"), netip.MustParsePrefix("8000::/1"),
	})
	for _, a := range []string{"0.0.0.0", "255.255.255.255", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "8000::", "c000::1"} {
		if !s.contains(netip.MustParseAddr(a)) {
			t.Errorf("%s not in %v", a, s)
		}
	}
	if s.contains(netip.MustParseAddr("7fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")) {
		t.Error("7fff:... in 8000::/1")
	}
	if len(s.v4) != 1 || len(s.v6) != 1 {
		t.Errorf("not merged: %v", s)
	}
}

func TestRuleExceptClients(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{{
		Name: "api", Policies: tight,
		Except: []Except{{Match: Match{Clients: []string{"10.0.0.0/8", "2001:db8::1"}}}},
	}}})
	if refused, headers := refusedSecond(t, e, get("/", "10.1.2.3")); refused || headers {
		t.Errorf("exempt client: refused %v, headers %v", refused, headers)
	}
	if refused, headers := refusedSecond(t, e, get("/", "2001:db8::1")); refused || headers {
		t.Errorf("exempt v6 client: refused %v, headers %v", refused, headers)
	}
	if refused, headers := refusedSecond(t, e, get("/", "192.0.2.1")); !refused || !headers {
		t.Errorf("other client: refused %v, headers %v", refused, headers)
	}
}

// TestExceptFieldsAND: within an entry every set field must match;
// any entry exempts.
func TestExceptFieldsAND(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{{
		Name: "api", Policies: tight,
		Except: []Except{
			{Match: Match{Clients: []string{"10.0.0.0/8"}, Paths: []string{"/health"}}},
			{Match: Match{Methods: []string{"OPTIONS"}}},
		},
	}}})
	if refused, _ := refusedSecond(t, e, get("/health", "10.0.0.1")); refused {
		t.Error("10.0.0.1 /health counted")
	}
	if refused, _ := refusedSecond(t, e, get("/health", "192.0.2.1")); !refused {
		t.Error("192.0.2.1 /health exempt: only the clients' is")
	}
	if refused, _ := refusedSecond(t, e, get("/other", "10.0.0.2")); !refused {
		t.Error("10.0.0.2 /other exempt: only /health is")
	}
	o := get("/x", "192.0.2.9")
	o.method = "OPTIONS"
	if refused, _ := refusedSecond(t, e, o); refused {
		t.Error("OPTIONS counted")
	}
}

func TestExceptKeys(t *testing.T) {
	long := strings.Repeat("k", 300) // hashed in the store key: compared by its raw value all the same
	e, _ := newEngine(t, Config{Rules: []Rule{
		{
			Name: "own", Key: Key{"header:X-API-Key"}, Policies: tight, Match: Match{Paths: []string{"/own"}},
			Except: []Except{{Keys: []string{"internal-1", long, "#starts-with-hash"}}},
		},
		{
			Name: "other", Policies: tight, Match: Match{Paths: []string{"/other"}},
			Except: []Except{{Key: "header:X-API-Key", Keys: []string{"internal-1"}}},
		},
		{
			Name: "composite", Key: Key{"header:X-Tenant", "host"}, Policies: tight, Match: Match{Paths: []string{"/composite"}},
			Except: []Except{{Keys: []string{"acme\x1fAPI.example.com"}}},
		},
	}})
	for _, k := range []string{"internal-1", long, "#starts-with-hash"} {
		if refused, headers := refusedSecond(t, e, get("/own", "192.0.2.1").with("X-API-Key", k)); refused || headers {
			t.Errorf("own key %.10q: refused %v, headers %v", k, refused, headers)
		}
	}
	if refused, _ := refusedSecond(t, e, get("/own", "192.0.2.1").with("X-API-Key", "internal-2")); !refused {
		t.Error("internal-2 exempt")
	}
	if refused, _ := refusedSecond(t, e, get("/own", "192.0.2.1").with("X-API-Key", strings.Repeat("k", 299))); !refused {
		t.Error("a shorter long key exempt")
	}
	if refused, _ := refusedSecond(t, e, get("/other", "192.0.2.2").with("X-API-Key", "internal-1")); refused {
		t.Error("other-part key counted")
	}
	if refused, _ := refusedSecond(t, e, get("/other", "192.0.2.3")); !refused {
		t.Error("no key exempt")
	}
	if refused, _ := refusedSecond(t, e, get("/composite", "192.0.2.4").with("X-Tenant", "acme")); refused {
		t.Error("composite key counted")
	}
	if refused, _ := refusedSecond(t, e, get("/composite", "192.0.2.4").with("X-Tenant", "other")); !refused {
		t.Error("composite other tenant exempt")
	}
}

// TestExceptOnlyItsRule: a rule's except exempts from that rule; the
// others still count and report.
func TestExceptOnlyItsRule(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{
		{Name: "a", Policies: tight, Except: []Except{{Match: Match{Clients: []string{"10.0.0.1"}}}}},
		{Name: "b", Policies: []Policy{{Algorithm: "fixed_window", Limit: 2, Window: "1h"}}},
	}})
	r := get("/", "10.0.0.1")
	res := decide(t, e, r)
	hs := fmt.Sprint(res.AppendHeaders(nil))
	if strings.Contains(hs, `"a"`) || !strings.Contains(hs, `"b"`) {
		t.Errorf("headers %s: want b's only", hs)
	}
	decide(t, e, r)
	if res := decide(t, e, r); res.Outcome != Refused {
		t.Errorf("third request: %v, want refused by b", res.Outcome)
	}
}

func TestTopLevelExcept(t *testing.T) {
	var mu sync.Mutex
	var evs []Event
	obs := ObserverFunc(func(ev Event) { mu.Lock(); evs = append(evs, ev); mu.Unlock() })
	e, _ := newEngine(t, Config{
		Observer: obs,
		Except:   []Except{{Match: Match{Clients: []string{"10.0.0.0/8"}}}, {Key: "header:X-API-Key", Keys: []string{"monitor"}}},
		Rules: []Rule{
			{Name: "a", Policies: tight},
			{Name: "s", Policies: tight, Shadow: true},
			{Name: "x", Policies: tight, Except: []Except{{Match: Match{Paths: []string{"/free"}}}}},
		},
	})
	for _, r := range []*req{get("/", "10.9.9.9"), get("/", "192.0.2.1").with("X-API-Key", "monitor")} {
		for i := 0; i < 3; i++ {
			res := decide(t, e, r)
			if res.Outcome != Allowed || len(res.AppendHeaders(nil)) > 0 || res.Shadow.Remaining != 0 {
				t.Fatalf("exempt request %d: %v, headers %v", i, res.Outcome, res.AppendHeaders(nil))
			}
		}
	}
	mu.Lock()
	if len(evs) != 6 {
		t.Fatalf("%d events, want 6 exempt ones: %+v", len(evs), evs)
	}
	for _, ev := range evs {
		if ev.Outcome != Exempt || ev.RuleIndex != -1 || ev.Rule != "" || ev.Key != "" {
			t.Errorf("event %+v: want a top-level Exempt", ev)
		}
	}
	evs = nil
	mu.Unlock()
	decide(t, e, get("/free", "192.0.2.50"))
	mu.Lock()
	defer mu.Unlock()
	var exempt []string
	for _, ev := range evs {
		if ev.Outcome == Exempt {
			exempt = append(exempt, fmt.Sprint(ev.Rule, " ", ev.RuleIndex, " ", ev.PolicyIndex))
		}
	}
	if fmt.Sprint(exempt) != "[x 2 -1]" {
		t.Errorf("exempt events %v, want [x 2 -1]", exempt)
	}
	if Exempt.String() != "exempt" {
		t.Error(Exempt.String())
	}
}

// TestExceptSpoofedForwardedFor: the clients list is matched against the
// resolved client IP, so a forwarding header from an untrusted peer does
// not make its sender exempt; from a trusted proxy it does.
func TestExceptSpoofedForwardedFor(t *testing.T) {
	e, _ := newEngine(t, Config{
		ClientIP: ClientIP{TrustedProxies: []string{"192.0.2.254"}},
		Rules:    []Rule{{Name: "a", Policies: tight, Except: []Except{{Match: Match{Clients: []string{"10.0.0.0/8"}}}}}},
	})
	if refused, _ := refusedSecond(t, e, get("/", "198.51.100.1").with("X-Forwarded-For", "10.0.0.1")); !refused {
		t.Error("an untrusted peer claiming 10.0.0.1 is exempt")
	}
	if refused, _ := refusedSecond(t, e, get("/", "192.0.2.254").with("X-Forwarded-For", "10.0.0.1")); refused {
		t.Error("10.0.0.1 through the trusted proxy counted")
	}
}

// TestMatchAndCostClients: clients in a rule's match and in cost.by.
func TestMatchAndCostClients(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{{
		Name: "partners", Match: Match{Clients: []string{"203.0.113.0/24"}},
		Policies: []Policy{{Algorithm: "fixed_window", Limit: 10, Window: "1h"}},
		Cost:     Cost{By: []CostBy{{Match: Match{Clients: []string{"203.0.113.128/25"}}, Cost: 10}}},
	}}})
	if res := decide(t, e, get("/", "192.0.2.1")); len(res.AppendHeaders(nil)) > 0 {
		t.Error("a client outside match limited")
	}
	if res := decide(t, e, get("/", "203.0.113.1")); res.Outcome != Allowed || len(res.AppendHeaders(nil)) == 0 {
		t.Error("a matched client not limited")
	}
	decide(t, e, get("/", "203.0.113.200"))
	if res := decide(t, e, get("/", "203.0.113.200")); res.Outcome != Refused {
		t.Errorf("cost 10 twice against 10: %v", res.Outcome)
	}
}

func TestExceptValidate(t *testing.T) {
	c := Config{
		Except: []Except{
			{},                                  // except[0]: nothing set
			{Keys: []string{"k"}},               // except[1]: top-level keys need key
			{Key: "bogus", Keys: []string{"k"}}, // except[2].key
			{Key: "header:X-K"},                 // except[3]: key without keys
		},
		Rules: []Rule{
			{Name: "a", Key: Key{"header:X-K"}, Policies: oneRate, Except: []Except{
				{Match: Match{Clients: []string{"10.0.0.0/8", "10.0.0.0/33", "", "10.0.0.0/8", "fe80::1%eth0", "nope"}}}, // [0].clients[1..5]
				{Keys: []string{"x", "", "x", "secret-key", "secret-key"}},                                               // [1].keys[1,2,4]
				{ClientsFile: "c.txt"},                    // [2].clients_file not loaded
				{KeysFile: "k.txt"},                       // [3].keys_file not loaded
				{Match: Match{Countries: []string{"DE"}}}, // [4]: not yet built
			}},
			{Name: "b", Policies: oneRate, Except: []Except{{Keys: []string{"1.2.3.4"}}}}, // keyed by ip: use clients
			{Name: "c", Policies: oneRate, Key: Key{"header:A", "header:B"}, Except: []Except{{Keys: []string{"one-part"}}}},
			{Name: "d", Policies: oneRate, Match: Match{Clients: []string{"bad"}}, Cost: Cost{By: []CostBy{{Match: Match{Clients: []string{"bad"}}, Cost: 2}}}},
		},
	}
	err := c.Validate()
	want := []string{
		"except[0]", "except[1].key", "except[2].key", "except[3].key",
		"rules[0].except[0].clients[1]", "rules[0].except[0].clients[2]", "rules[0].except[0].clients[3]",
		"rules[0].except[0].clients[4]", "rules[0].except[0].clients[5]",
		"rules[0].except[1].keys[1]", "rules[0].except[1].keys[2]", "rules[0].except[1].keys[4]",
		"rules[0].except[2].clients_file", "rules[0].except[3].keys_file", "rules[0].except[4].countries",
		"rules[1].except[0].keys", "rules[2].except[0].keys[0]",
		"rules[3].match.clients[0]", "rules[3].cost.by[0].match.clients[0]",
	}
	var got []string
	if err != nil {
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			var fe *FieldError
			if !errors.As(e, &fe) {
				t.Fatalf("%v is not a *FieldError", e)
			}
			if strings.Contains(e.Error(), "secret-key") {
				t.Errorf("%q leaks a key", e)
			}
			got = append(got, fe.Path)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("problems at\n%v\nwant\n%v\n%v", got, want, err)
	}
}

func TestExceptBounds(t *testing.T) {
	big := make([]string, MaxListEntries+1)
	for i := range big {
		big[i] = fmt.Sprint(i)
	}
	c := Config{Rules: []Rule{{Name: "a", Key: Key{"header:K"}, Policies: oneRate, Except: []Except{
		{Keys: big},
		{Keys: []string{strings.Repeat("x", MaxListEntryBytes+1)}},
	}}}}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "rules[0].except[0].keys: 1000001 keys: at most 1000000") ||
		!strings.Contains(err.Error(), "rules[0].except[1].keys[0]: longer than 4096 bytes") {
		t.Errorf("bounds: %v", err)
	}
}

func TestParseListFiles(t *testing.T) {
	good := "# monitoring\n10.0.0.0/8  # office\n\n 2001:db8::/32\r\n192.0.2.7\n"
	got, err := ParseClientsFile("c.txt", strings.NewReader(good))
	if err != nil || fmt.Sprint(got) != "[10.0.0.0/8 2001:db8::/32 192.0.2.7]" {
		t.Fatalf("%v, %v", got, err)
	}
	if got, err := ParseClientsFile("c.txt", strings.NewReader("")); err != nil || got == nil || len(got) != 0 {
		t.Errorf("an empty file: %#v, %v", got, err)
	}
	for _, tt := range []struct{ in, want string }{
		{"10.0.0.0/8\nnot-an-address\n", "c.txt:2: "},
		{"10.0.0.0/8\n\n10.0.0.1/8\n", "c.txt:3: 10.0.0.0/8 repeats line 1"},
		{"fe80::1%eth0\n", "c.txt:1: "},
		{"#\n" + strings.Repeat("1", MaxListEntryBytes+10) + "\n", "c.txt:2: line longer than"},
	} {
		_, err := ParseClientsFile("c.txt", strings.NewReader(tt.in))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%.20q: %v, want %s...", tt.in, err, tt.want)
		}
	}
	keys, err := ParseKeysFile("k.txt", strings.NewReader("# internal keys\n key-1 \nkey#2\n"))
	if err != nil || fmt.Sprint(keys) != "[key-1 key#2]" {
		t.Fatalf("%v, %v", keys, err)
	}
	_, err = ParseKeysFile("k.txt", strings.NewReader("secret-1\nsecret-1\n"))
	if err == nil || err.Error() != "k.txt:2: repeats line 1" {
		t.Errorf("repeated key: %v", err)
	}
}

// endless is an endless list file of comments (a /dev/zero).
type endless struct{ off int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = "#\n"[e.off%2]
		e.off++
	}
	return len(p), nil
}

func TestParseListFileBounded(t *testing.T) {
	defer func(n int64) { maxListFile = n }(maxListFile)
	maxListFile = 1 << 20
	_, err := ParseKeysFile("k.txt", &endless{})
	if err == nil || !strings.Contains(err.Error(), "larger than 1048576 bytes") {
		t.Errorf("an endless file: %v", err)
	}
}

func TestExceptFileEntries(t *testing.T) {
	clients, err := ParseClientsFile("c.txt", strings.NewReader("10.0.0.0/8\n"))
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := ParseKeysFile("k.txt", strings.NewReader("file-key\n"))
	e, _ := newEngine(t, Config{Rules: []Rule{{
		Name: "a", Key: Key{"header:K"}, Anonymous: true, Policies: tight,
		Except: []Except{{ClientsFile: "c.txt", FileClients: clients}, {KeysFile: "k.txt", FileKeys: keys, Keys: []string{"inline"}}},
	}}})
	for _, r := range []*req{get("/", "10.0.0.1"), get("/", "192.0.2.1").with("K", "file-key"), get("/", "192.0.2.1").with("K", "inline")} {
		if refused, _ := refusedSecond(t, e, r); refused {
			t.Errorf("%v counted", r)
		}
	}
	// An anonymous request (no K) is not the rule's own key of any list.
	if refused, _ := refusedSecond(t, e, get("/", "192.0.2.1")); !refused {
		t.Error("an anonymous request exempt")
	}
}

// tenK are 10,000 prefixes none of which holds 192.0.2.1 and no two of
// which touch (so that none merge: the table has 10,000 ranges).
func tenK() []string {
	out := make([]string, 0, 10000)
	for i := 0; i < 9000; i++ {
		out = append(out, fmt.Sprintf("100.%d.%d.0/24", 2*i/256, 2*i%256))
	}
	for i := 0; i < 1000; i++ {
		out = append(out, fmt.Sprintf("2001:db8:%x::/48", 2*i))
	}
	return out
}

func TestExcept10kCIDRs(t *testing.T) {
	list := tenK()
	start := time.Now()
	cfg := Config{Rules: []Rule{{Name: "per-ip", Policies: []Policy{{Rate: "1000000000/s"}}, Except: []Except{{Match: Match{Clients: list}}}}}}
	e, _ := newEngine(t, cfg)
	if took := time.Since(start); took > 100*time.Millisecond && !racebuild.Enabled {
		t.Errorf("compiling 10,000 prefixes took %v", took)
	}
	if n := allowedAllocs(t, e, get("/items/1", "192.0.2.1")); n != 0 {
		t.Errorf("an allowed request with a 10k except list: %v allocs", n)
	}
	if n := len(e.enforced[0].except[0].match.clients.v4) + len(e.enforced[0].except[0].match.clients.v6); n != 10000 {
		t.Errorf("%d ranges, want 10000", n)
	}
	res := decide(t, e, get("/", "100.34.254.9"))
	if len(res.AppendHeaders(nil)) > 0 {
		t.Error("100.34.254.9 not exempt")
	}
	if res := decide(t, e, get("/", "100.34.255.9")); len(res.AppendHeaders(nil)) == 0 {
		t.Error("100.34.255.9 exempt")
	}
	exempt := get("/", "100.34.254.9")
	if n := testing.AllocsPerRun(1000, func() { decide(t, e, exempt) }); n != 0 {
		t.Errorf("an exempt request: %v allocs", n)
	}
}

// BenchmarkDecideExcept10kCIDRs is BenchmarkDecideIP with an exemption
// list of 10,000 prefixes the client is not in (the list is searched and
// the request counted).
func BenchmarkDecideExcept10kCIDRs(b *testing.B) {
	e, _ := newEngine(b, Config{Rules: []Rule{{Name: "per-ip", Policies: []Policy{{Rate: "1000000000/s"}},
		Except: []Except{{Match: Match{Clients: tenK()}}}}}})
	r := get("/items/1", "192.0.2.1")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if res, _ := e.Decide(ctx, r); res.Outcome != Allowed {
			b.Fatal(res.Outcome)
		}
	}
}

// BenchmarkDecideExceptTopLevel10kCIDRs has the list at the top level.
func BenchmarkDecideExceptTopLevel10kCIDRs(b *testing.B) {
	e, _ := newEngine(b, Config{Except: []Except{{Match: Match{Clients: tenK()}}},
		Rules: []Rule{{Name: "per-ip", Policies: []Policy{{Rate: "1000000000/s"}}}}})
	r := get("/items/1", "192.0.2.1")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if res, _ := e.Decide(ctx, r); res.Outcome != Allowed {
			b.Fatal(res.Outcome)
		}
	}
}

// BenchmarkDecideExceptKeys is a rule keyed by API key with 10,000
// exempt keys.
func BenchmarkDecideExceptKeys(b *testing.B) {
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = fmt.Sprintf("internal-%d", i)
	}
	e, _ := newEngine(b, Config{Rules: []Rule{{Name: "per-key", Key: Key{"header:X-API-Key"}, Policies: []Policy{{Rate: "1000000000/s"}},
		Except: []Except{{Keys: keys}}}}})
	r := get("/items/1", "192.0.2.1").with("X-API-Key", "customer-1")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if res, _ := e.Decide(ctx, r); res.Outcome != Allowed {
			b.Fatal(res.Outcome)
		}
	}
}

// FuzzParseListFile feeds arbitrary bytes to both list-file parsers: no
// panic; an accepted clients file's entries are addresses or prefixes
// that compile (and the compiled set holds each), an accepted keys
// file's entries are non-empty, bounded and trimmed; an error names the
// file.
func FuzzParseListFile(f *testing.F) {
	for _, s := range []string{
		"10.0.0.0/8\n# comment\n2001:db8::/32 # trailing\n",
		"192.0.2.7\r\n\r\n::ffff:10.0.0.0/104\n",
		"key-1\n  key 2  \n#x\nkey#3\n",
		"10.0.0.0/8\n10.0.0.1/8\n",
		"fe80::1%eth0\n",
		"\xff\xfe\x00\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		clients, err := ParseClientsFile("c.txt", strings.NewReader(string(data)))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "c.txt:") {
				t.Fatalf("error %q does not name the file", err)
			}
		} else {
			var ps problems
			s, _ := compileClients(nil, nil, clients, "clients_file", &ps)
			if len(ps) > 0 {
				t.Fatalf("accepted entries do not compile: %v", ps)
			}
			for _, c := range clients {
				p, err := parseClient(c)
				if err != nil || !s.contains(p.Addr()) {
					t.Fatalf("%q: %v, or not in its set", c, err)
				}
			}
		}
		keys, err := ParseKeysFile("k.txt", strings.NewReader(string(data)))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "k.txt:") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for _, k := range keys {
			if k == "" || len(k) > MaxListEntryBytes || k != strings.TrimSpace(k) || k[0] == '#' {
				t.Fatalf("accepted key %q", k)
			}
		}
	})
}

// BenchmarkClientSetContains10k is one lookup in a table of 10,000
// ranges, clients in and out of it.
func BenchmarkClientSetContains10k(b *testing.B) {
	var ps problems
	s, _ := compileClients(tenK(), func(int) string { return "" }, nil, "", &ps)
	addrs := []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("100.20.2.4"), netip.MustParseAddr("2001:db8:7::1"), netip.MustParseAddr("100.1.1.1")}
	n := 0
	for i := 0; b.Loop(); i++ {
		if s.contains(addrs[i&3]) {
			n++
		}
	}
	if n == 0 {
		b.Fatal("none in")
	}
}

// A list file saved by an editor that writes a UTF-8 byte order mark
// (Notepad) or CRLF line ends reads as the same entries: a key read
// with the mark in front, or a "\r" behind, would never be exempt,
// silently.
func TestListFileBOMAndCRLF(t *testing.T) {
	for _, in := range []string{
		"\ufeffk-internal-1\nk-internal-2\n",
		"\ufeffk-internal-1\r\nk-internal-2\r\n",
		"\ufeff# internal keys\r\nk-internal-1\r\nk-internal-2",
	} {
		keys, err := ParseKeysFile("internal-api-keys.txt", strings.NewReader(in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if !slices.Equal(keys, []string{"k-internal-1", "k-internal-2"}) {
			t.Errorf("%q: read as %q", in, keys)
		}
	}
	clients, err := ParseClientsFile("c.txt", strings.NewReader("\ufeff10.0.0.0/8\r\n192.0.2.7 # monitor\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(clients, []string{"10.0.0.0/8", "192.0.2.7"}) {
		t.Errorf("clients read as %q", clients)
	}
	// Only a leading mark is dropped: one further in stays in its entry.
	if keys, err := ParseKeysFile("k.txt", strings.NewReader("a\n\ufeffb\n")); err != nil || keys[1] != "\ufeffb" {
		t.Errorf("a mark on line 2: %q, %v", keys, err)
	}
}
