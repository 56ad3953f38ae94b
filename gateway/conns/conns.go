package conns

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// connKey names an upstream connection by its two ends.
type connKey struct{ local, remote netip.AddrPort }

func keyOf(local, remote net.Addr) (connKey, bool) {
	l, ok1 := local.(*net.TCPAddr)
	r, ok2 := remote.(*net.TCPAddr)
	if !ok1 || !ok2 {
		return connKey{}, false
	}
	return connKey{l.AddrPort(), r.AddrPort()}, true
}

// UpstreamConns tracks the open upstream connections, so that once a
// response's headers have arrived within the response timeout, the rest
// of a streamed body may take as long as it takes.
type UpstreamConns struct{ m sync.Map } // connKey → *trackedConn

// Dial wraps a dial function so that its connections are tracked until
// they close and bound each exchange by timeout (none when zero).
func (u *UpstreamConns) Dial(d *net.Dialer, timeout time.Duration) func(string) (net.Conn, error) {
	return func(addr string) (net.Conn, error) {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		tc := &trackedConn{Conn: c, u: u, timeout: timeout, slack: DeadlineSlack(timeout)}
		if k, ok := keyOf(c.LocalAddr(), c.RemoteAddr()); ok {
			tc.k, tc.tracked = k, true
			u.m.Store(k, tc)
		}
		return tc, nil
	}
}

// DeadlineSlack is how much later than asked an exchange's deadline may
// fall: an eighth of the timeout, at most a second. It lets a
// connection's deadline be set once for many quick exchanges instead of
// twice for each.
func DeadlineSlack(timeout time.Duration) time.Duration {
	return min(timeout/8, time.Second)
}

// LiftDeadline removes the deadline of the connection between local and
// remote until its next exchange.
func (u *UpstreamConns) LiftDeadline(local, remote net.Addr) {
	k, ok := keyOf(local, remote)
	if !ok {
		return
	}
	if c, ok := u.m.Load(k); ok {
		c.(*trackedConn).lift()
	}
}

// trackedConn is an upstream connection that forgets itself when closed
// and bounds each exchange by the response timeout.
//
// fasthttp can bound an exchange itself (Request.SetTimeout), but it
// reads the clock twice and sets the connection's write and read
// deadlines anew for every request: two timer updates in the runtime per
// request, whatever the load. Here a request's first write checks the
// deadline already set on the connection and leaves it when it still
// gives the exchange the full timeout; otherwise it sets one for timeout
// plus slack from now.
// An exchange thus fails between timeout and timeout + slack after its
// last write, and a busy connection sets its deadline about once per
// slack instead of twice per request.
type trackedConn struct {
	net.Conn
	u       *UpstreamConns
	k       connKey
	tracked bool // in u under k
	once    sync.Once

	timeout, slack time.Duration
	// armed is the deadline set on Conn, in Unix nanoseconds; 0 for none.
	// Only the goroutine using the connection touches it (fasthttp hands
	// a connection from one request to the next under its pool's lock).
	armed int64
}

// Write makes sure the deadline covers the exchange, then writes.
func (c *trackedConn) Write(b []byte) (int, error) {
	if c.timeout > 0 {
		now := time.Now().UnixNano()
		if c.armed < now+int64(c.timeout) {
			d := now + int64(c.timeout+c.slack)
			if err := c.Conn.SetDeadline(time.Unix(0, d)); err != nil {
				return 0, err
			}
			c.armed = d
		}
	}
	return c.Conn.Write(b)
}

// SetDeadline, SetReadDeadline and SetWriteDeadline pass a deadline on,
// but ignore a zero one: the connection bounds its exchanges itself, and
// fasthttp clears the deadlines of every new connection after its first
// request is written, which would leave that exchange unbounded.
func (c *trackedConn) SetDeadline(t time.Time) error { return c.pass(t, c.Conn.SetDeadline) }

// SetReadDeadline is SetDeadline for reads.
func (c *trackedConn) SetReadDeadline(t time.Time) error { return c.pass(t, c.Conn.SetReadDeadline) }

// SetWriteDeadline is SetDeadline for writes.
func (c *trackedConn) SetWriteDeadline(t time.Time) error { return c.pass(t, c.Conn.SetWriteDeadline) }

// pass sets a non-zero deadline t with set; the next write then sets the
// exchange's own deadline again.
func (c *trackedConn) pass(t time.Time, set func(time.Time) error) error {
	if t.IsZero() {
		return nil
	}
	c.armed = 0
	return set(t)
}

// lift removes the deadline until the next write sets one.
func (c *trackedConn) lift() {
	c.Conn.SetDeadline(time.Time{})
	c.armed = 0
}

// Close closes the connection and stops tracking it.
func (c *trackedConn) Close() error {
	if c.tracked {
		c.once.Do(func() { c.u.m.Delete(c.k) })
	}
	return c.Conn.Close()
}

// ClientHolds bounds what one client holds of an upstream's connection
// pool (upstream.max_conns_per_client): the exchanges with the upstream
// each client network (rules.ClientNets) has in flight, from the request
// sent to the last byte of the response written to the client. HTTP/1.1
// holds an upstream connection for each; on the net/http path each is a
// stream or a connection. Without it, clients that never read their
// responses (a window of 0 on HTTP/2, a full socket on HTTP/1.1) hold
// every connection of the pool and nobody else is served.
//
// A network has an entry only while it holds something, so the table is
// bounded by the exchanges in flight. Sharded by address: the proxy
// path takes one lock for the hold and one for its release.
type ClientHolds struct {
	shards [16]holdShard
}

type holdShard struct {
	mu sync.Mutex
	n  map[netip.Prefix]int32
}

func (h *ClientHolds) shard(p netip.Prefix) *holdShard {
	a := p.Addr().As16()
	return &h.shards[(a[15]^a[13]^a[11]^a[7])&15]
}

// Acquire takes a place for p, or reports that p holds its share, max.
func (h *ClientHolds) Acquire(p netip.Prefix, max int32) bool {
	sh := h.shard(p)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n := sh.n[p]
	if n >= max {
		return false
	}
	if sh.n == nil {
		sh.n = map[netip.Prefix]int32{}
	}
	sh.n[p] = n + 1
	return true
}

// Release gives back a place acquire took for p.
func (h *ClientHolds) Release(p netip.Prefix) {
	sh := h.shard(p)
	sh.mu.Lock()
	if n := sh.n[p]; n > 1 {
		sh.n[p] = n - 1
	} else {
		delete(sh.n, p)
	}
	sh.mu.Unlock()
}

// held is how many places p holds.
func (h *ClientHolds) held(p netip.Prefix) int {
	sh := h.shard(p)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return int(sh.n[p])
}

// ClientHold is a place taken in a clientHolds, or none (h nil).
type ClientHold struct {
	h *ClientHolds
	p netip.Prefix
}

// Release gives the place back, once.
func (c *ClientHold) Release() {
	if c.h != nil {
		c.h.Release(c.p)
		c.h = nil
	}
}

// Taken returns the hold of the place Acquire took for p, to release
// when the exchange ends.
func (h *ClientHolds) Taken(p netip.Prefix) ClientHold { return ClientHold{h, p} }
