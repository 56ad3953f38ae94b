package fastpath

import (
	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/fastlimit"
	"github.com/tollgate-dev/tollgate/gateway/conns"
	"github.com/tollgate-dev/tollgate/gateway/exchange"
)

// holdUpstream takes a place in rt's upstream pool share for ctx's
// client, held until the exchange ends (connState releases it once the
// response's last byte is written), or answers 503 and reports false
// when the client holds its whole share (upstream.max_conns_per_client).
func holdUpstream(ctx *fasthttp.RequestCtx, s *exchange.Snapshot, rt *exchange.Route) bool {
	if rt.Holds == nil {
		return true
	}
	p, ok := s.Nets.Of(fastlimit.Request{Ctx: ctx})
	if !ok {
		return true
	}
	if !rt.Holds.Acquire(p, rt.Share) {
		rt.ShareRefused.Inc()
		clientHoldsShare(ctx)
		return false
	}
	y := conns.AsYieldConn(ctx.Conn())
	if y == nil {
		// No connection of the gateway's own (a test serving a
		// RequestCtx): nothing tells when the exchange ends.
		rt.Holds.Release(p)
		return true
	}
	y.Upstream.Release() // never two exchanges at once, but be sure
	y.Upstream = rt.Holds.Taken(p)
	return true
}

// clientHoldsShare answers a request whose client holds its share of the
// upstream pool.
func clientHoldsShare(ctx *fasthttp.RequestCtx) {
	problem(ctx, fasthttp.StatusServiceUnavailable, "Service Unavailable", exchange.ClientShareDetail)
}
