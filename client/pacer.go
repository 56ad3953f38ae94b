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
// Every request sent to a host gets a sequence number. A response to
// request s that reports r remaining leaves r - (requests sent after s)
// for new requests: those in flight will be charged too. A response older
// than one already heard from is stale and ignored. When the budget is
// spent, new requests wait for the reported reset; after it the budget is
// unknown again and requests flow until a response says otherwise.
// Retry-After puts the host on hold, which a later response never shortens.
type pacer struct {
	mu    sync.Mutex
	hosts map[string]*hostState
	max   int
}

type hostState struct {
	sent   uint64    // sequence number of the latest request sent
	heard  uint64    // sequence number of the newest response with an allowance
	budget int64     // requests that may still go before reset
	reset  time.Time // when budget stops applying; zero: no budget known
	hold   time.Time // nothing is sent before this (Retry-After)
}

// active reports whether st still constrains anything at now.
func (st *hostState) active(now time.Time) bool {
	return st.hold.After(now) || st.reset.After(now)
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

// acquire asks to send a request to host at now. It returns the request's
// sequence number and zero, or the time to wait before asking again.
func (p *pacer) acquire(host string, now time.Time) (seq uint64, wait time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state(host, now)
	if d := st.hold.Sub(now); d > 0 {
		return 0, d
	}
	if !st.reset.IsZero() {
		if !st.reset.After(now) {
			st.reset = time.Time{} // reset passed: budget unknown again
		} else if st.budget <= 0 {
			return 0, st.reset.Sub(now)
		} else {
			st.budget--
		}
	}
	st.sent++
	return st.sent, 0
}

// force numbers a request sent to host regardless of its state.
func (p *pacer) force(host string, now time.Time) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state(host, now)
	st.sent++
	return st.sent
}

// observe records the allowance a reported in the response to request seq,
// read at now. Only a spent-or-counted allowance with a known reset is
// kept: without a reset there is nothing to wait for.
func (p *pacer) observe(host string, seq uint64, a Allowance, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state(host, now)
	if seq < st.heard || seq > st.sent {
		return // stale, or from before the entry was evicted and remade
	}
	st.heard = seq
	if a.Reset <= 0 {
		st.reset = time.Time{}
		return
	}
	st.budget = a.Remaining - int64(st.sent-seq)
	st.reset = now.Add(a.Reset)
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
