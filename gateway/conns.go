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
// of a streamed body may take as long as it takes: fasthttp keeps the
// request's deadline on the connection until the body is read.
type upstreamConns struct{ m sync.Map } // connKey → net.Conn

// dial wraps a dial function so that its connections are tracked until
// they close.
func (u *upstreamConns) dial(d *net.Dialer) func(string) (net.Conn, error) {
	return func(addr string) (net.Conn, error) {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		k, ok := keyOf(c.LocalAddr(), c.RemoteAddr())
		if !ok {
			return c, nil
		}
		u.m.Store(k, c)
		return &trackedConn{Conn: c, u: u, k: k}, nil
	}
}

// liftDeadline removes the read deadline of the connection between local
// and remote.
func (u *upstreamConns) liftDeadline(local, remote net.Addr) {
	k, ok := keyOf(local, remote)
	if !ok {
		return
	}
	if c, ok := u.m.Load(k); ok {
		c.(net.Conn).SetReadDeadline(time.Time{})
	}
}

// trackedConn forgets itself when closed.
type trackedConn struct {
	net.Conn
	u    *upstreamConns
	k    connKey
	once sync.Once
}

// Close closes the connection and stops tracking it.
func (c *trackedConn) Close() error {
	c.once.Do(func() { c.u.m.Delete(c.k) })
	return c.Conn.Close()
}
