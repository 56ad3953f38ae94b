package conns

import (
	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/rules"
)

// HoldSlots keeps the concurrency slots of res (and the counting
// reservations its Charge did not end: an exchange never charged) until
// the exchange ends:
// the response's last byte written (a streamed body included), the
// client gone, or the connection hijacked (fastpath.Server.ConnState). It runs when the
// handler returns, whichever way: a refusal, an upstream error or
// timeout, a panic. Without a connection of the gateway's own (a test
// serving a RequestCtx directly) it releases at once.
func HoldSlots(ctx *fasthttp.RequestCtx, res *rules.Result) {
	y := AsYieldConn(ctx.Conn())
	if y == nil {
		res.Release()
		return
	}
	ReleaseExchangeSlots(y) // never two exchanges at once, but be sure
	y.slots, y.holding = *res, true
}

// ReleaseExchangeSlots releases what holdSlots kept on y.
func ReleaseExchangeSlots(y *YieldConn) {
	if !y.holding {
		return
	}
	y.holding = false
	y.slots.Release()
	y.slots = rules.Result{}
}
