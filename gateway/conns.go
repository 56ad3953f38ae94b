package gateway

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

// upstreamConns tracks the open upstream connections, so that once a
// response's headers have arrived within the response timeout, the rest
// of a streamed body may take as long as it takes.
type upstreamConns struct{ m sync.Map } // connKey → *trackedConn

// dial wraps a dial function so that its connections are tracked until
// they close and bound each exchange by timeout (none when zero).
func (u *upstreamConns) dial(d *net.Dialer, timeout time.Duration) func(string) (net.Conn, error) {
	return func(addr string) (net.Conn, error) {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		tc := &trackedConn{Conn: c, u: u, timeout: timeout, slack: deadlineSlack(timeout)}
		if k, ok := keyOf(c.LocalAddr(), c.RemoteAddr()); ok {
			tc.k, tc.tracked = k, true
			u.m.Store(k, tc)
		}
		return tc, nil
	}
}

// deadlineSlack is how much later than asked an exchange's deadline may
// fall: an eighth of the timeout, at most a second. It lets a
// connection's deadline be set once for many quick exchanges instead of
// twice for each.
func deadlineSlack(timeout time.Duration) time.Duration {
	return min(timeout/8, time.Second)
}

// liftDeadline removes the deadline of the connection between local and
// remote until its next exchange.
func (u *upstreamConns) liftDeadline(local, remote net.Addr) {
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
	u       *upstreamConns
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
