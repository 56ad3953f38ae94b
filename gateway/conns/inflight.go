package conns

import (
	"crypto/tls"
	"fmt"
	"net"

	"github.com/valyala/fasthttp"
)

// connState is the traffic server's fasthttp.Server.ConnState hook: it
// counts the connections in the middle of an exchange, from the first
// byte of a request to the last of its response (a streamed body
// included), in g.inFlight. HTTP/1.1 carries one exchange at a time, so
// that is the number of requests being served. Only the connection's own
// goroutine reports its Active, Idle and Hijacked states and a Closed
// after Active, so its flag needs no lock.
func (g *Gateway) connState(c net.Conn, st fasthttp.ConnState) {
	y := asYieldConn(c)
	if y == nil {
		return
	}
	switch st {
	case fasthttp.StateActive:
		if !y.active {
			y.active = true
			g.inFlight.Add(1)
		}
	case fasthttp.StateIdle, fasthttp.StateHijacked, fasthttp.StateClosed:
		if y.active {
			y.active = false
			g.inFlight.Add(-1)
		}
		releaseExchangeSlots(y)
		y.upstream.release()
	}
}

// asYieldConn is the listener's own connection under c, or nil for a
// connection it did not wrap.
func asYieldConn(c net.Conn) *yieldConn {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	y, _ := c.(*yieldConn)
	return y
}

// CutError is Shutdown's error when its context ended while requests
// were still being served. They are abandoned: they end when the process
// does, which cuts them.
type CutError struct {
	// Requests is how many requests were still being served.
	Requests int64
	// Err is the context's error.
	Err error
}

// Error says how many requests were cut and why.
func (e *CutError) Error() string {
	return fmt.Sprintf("%d requests still running were cut: %v", e.Requests, e.Err)
}

// Unwrap returns the context's error.
func (e *CutError) Unwrap() error { return e.Err }
