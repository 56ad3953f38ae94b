package client

import (
	"net"
	"net/url"
	"strings"
	"sync"
	"time"
)

// pacer keeps, per host, what the host's responses said about its
// allowance, and spends it as requests go out, so that a client with
// several requests in flight does not send more than the host said it
// would accept. It is safe for concurrent use and holds at most max hosts.
//
// A response that reports r remaining with a reset leaves r - (requests
// still in flight) for new requests until that reset: those in flight may
// be charged too, or may have been counted in r already; counting them
// again errs on the polite side. Until the reset the budget only shrinks:
// responses to concurrent requests arrive in any order, and a response
// the server answered earlier must not restore units a later one spent.
// When the budget is spent new requests wait for the reset; after it the
// budget is unknown again and requests flow until a response says
// otherwise. Retry-After, and a response saying nothing is left until a
// reset, put the host on hold, which a later response never shortens:
// that holds whatever window or policy other responses describe. Of two
// budgets with resets more than a second apart, the later window's
// stands whole.
type pacer struct {
	mu    sync.Mutex
	hosts map[string]*hostState
	max   int
}

type hostState struct {
	inflight int64     // requests acquired and not yet done
	budget   int64     // requests that may still go before reset
	reset    time.Time // when budget stops applying; zero: no budget known
	hold     time.Time // nothing is sent before this (Retry-After)
}

// active reports whether st still constrains anything at now.
func (st *hostState) active(now time.Time) bool {
	return st.inflight > 0 || st.hold.After(now) || st.reset.After(now)
}

// end is the instant after which st constrains nothing.
func (st *hostState) end() time.Time {
	if st.hold.After(st.reset) {
		return st.hold
	}
	return st.reset
}

func newPacer(max int) *pacer {
	return &pacer{hosts: make(map[string]*hostState), max: max}
}

// acquire asks to send a request to host at now. It returns zero when the
// request may go (it is then in flight until done), or the time to wait
// before asking again.
func (p *pacer) acquire(host string, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state(host, now)
	if d := st.hold.Sub(now); d > 0 {
		return d
	}
	if !st.reset.IsZero() {
		if !st.reset.After(now) {
			st.reset = time.Time{} // reset passed: budget unknown again
		} else if st.budget <= 0 {
			return st.reset.Sub(now)
		} else {
			st.budget--
		}
	}
	st.inflight++
	return 0
}

// force puts a request to host in flight regardless of its state.
func (p *pacer) force(host string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state(host, now).inflight++
}

// done ends a request to host at now, recording the allowance its
// response reported when known. An allowance without a reset says nothing
// to wait for and changes nothing.
func (p *pacer) done(host string, a Allowance, known bool, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state(host, now)
	if st.inflight > 0 {
		st.inflight--
	}
	if !known || a.Reset <= 0 {
		return
	}
	if a.spent() {
		// The server's last word: nothing before the reset, whichever
		// window or policy the other responses spoke of. A hold, which
		// only ever extends.
		if t := now.Add(a.Reset); t.After(st.hold) {
			st.hold = t
		}
		return
	}
	budget, reset := a.Remaining-st.inflight, now.Add(a.Reset)
	if st.reset.After(now) {
		if d := st.reset.Sub(reset); d >= -sameWindow && d <= sameWindow {
			// The same window seen by two responses: the smaller budget,
			// until the later reset.
			budget = min(budget, st.budget)
			reset = maxTime(reset, st.reset)
		} else if st.reset.After(reset) {
			// Two windows, and this response is from the earlier one (it
			// was in flight across the reset): the server has moved on
			// to the later window, which stays. A budget never takes
			// another window's reset.
			budget, reset = st.budget, st.reset
		}
		// Otherwise this response is from the later window: it replaces
		// the earlier one whole.
	}
	st.budget, st.reset = budget, reset
}

// sameWindow is how far apart two responses' resets may be and still name
// one window: resets are given in whole seconds, counted from when each
// response left the server.
const sameWindow = time.Second

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// holdUntil puts host on hold until t (Retry-After). Holds only ever
// extend: responses arrive in any order.
func (p *pacer) holdUntil(host string, t, now time.Time) {
	if !t.After(now) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state(host, now)
	if t.After(st.hold) {
		st.hold = t
	}
}

// state returns host's entry, making room for it if needed. The caller
// holds mu.
func (p *pacer) state(host string, now time.Time) *hostState {
	if st, ok := p.hosts[host]; ok {
		return st
	}
	if len(p.hosts) >= p.max {
		p.evict(now)
	}
	st := &hostState{}
	p.hosts[host] = st
	return st
}

// evict drops every entry that no longer constrains anything; if all
// still do, the one that ends soonest. The caller holds mu.
func (p *pacer) evict(now time.Time) {
	var soonest string
	var first time.Time
	for h, st := range p.hosts {
		if !st.active(now) {
			delete(p.hosts, h)
			continue
		}
		if soonest == "" || st.end().Before(first) {
			soonest, first = h, st.end()
		}
	}
	if len(p.hosts) >= p.max && soonest != "" {
		delete(p.hosts, soonest)
	}
}

// hostKey names the host a request goes to: lower-case host and port,
// with the scheme's default port made explicit.
func hostKey(u *url.URL) string {
	if u.Port() != "" && !hasUpper(u.Host) {
		return u.Host // already host:port in canonical form: no allocation
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https", "wss":
			port = "443"
		default:
			port = "80"
		}
	}
	return net.JoinHostPort(host, port)
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return true
		}
	}
	return false
}
