package client

import (
	"net"
	"net/url"
	"strings"
	"sync"
	"time"
)

// pacer remembers, per host, the instant before which no request should be
// sent because the host said its allowance is spent. It is safe for
// concurrent use and holds at most max hosts.
type pacer struct {
	mu    sync.Mutex
	until map[string]time.Time
	max   int
}

func newPacer(max int) *pacer {
	return &pacer{until: make(map[string]time.Time), max: max}
}

// wait returns how long a request to host must wait at now (zero: go).
// An entry that has passed is forgotten.
func (p *pacer) wait(host string, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.until[host]
	if !ok {
		return 0
	}
	if d := t.Sub(now); d > 0 {
		return d
	}
	delete(p.until, host)
	return 0
}

// hold records that host accepts nothing before t. An earlier hold is only
// ever extended: responses to concurrent requests arrive in any order, and
// a stale "remaining: 5" must not lift a fresh "remaining: 0".
func (p *pacer) hold(host string, t, now time.Time) {
	if !t.After(now) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.until[host]; ok {
		if t.After(old) {
			p.until[host] = t
		}
		return
	}
	if len(p.until) >= p.max {
		p.evict(now)
	}
	p.until[host] = t
}

// evict drops every passed entry; if none has passed, the one that ends
// soonest. The caller holds mu.
func (p *pacer) evict(now time.Time) {
	var soonest string
	var first time.Time
	for h, t := range p.until {
		if !t.After(now) {
			delete(p.until, h)
			continue
		}
		if soonest == "" || t.Before(first) {
			soonest, first = h, t
		}
	}
	if len(p.until) >= p.max && soonest != "" {
		delete(p.until, soonest)
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
