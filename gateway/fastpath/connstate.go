package fastpath

import (
	"net"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/gateway/conns"
)

// ConnState is the traffic server's fasthttp.Server.ConnState hook: it
// counts the connections in the middle of an exchange, from the first
// byte of a request to the last of its response (a streamed body
// included), in g.inFlight. HTTP/1.1 carries one exchange at a time, so
// that is the number of requests being served. Only the connection's own
// goroutine reports its Active, Idle and Hijacked states and a Closed
// after Active, so its flag needs no lock.
func (g *Server) ConnState(c net.Conn, st fasthttp.ConnState) {
	y := conns.AsYieldConn(c)
	if y == nil {
		return
	}
	switch st {
	case fasthttp.StateActive:
		if !y.Active {
			y.Active = true
			g.InFlight.Add(1)
		}
	case fasthttp.StateIdle, fasthttp.StateHijacked, fasthttp.StateClosed:
		if y.Active {
			y.Active = false
			g.InFlight.Add(-1)
		}
		conns.ReleaseExchangeSlots(y)
		y.Upstream.Release()
	}
}
