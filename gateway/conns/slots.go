package conns

import (
	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/store/redis"
)

// holdSlots keeps the concurrency slots of res until the exchange ends:
// the response's last byte written (a streamed body included), the
// client gone, or the connection hijacked (connState). It runs when the
// handler returns, whichever way: a refusal, an upstream error or
// timeout, a panic. Without a connection of the gateway's own (a test
// serving a RequestCtx directly) it releases at once.
func holdSlots(ctx *fasthttp.RequestCtx, res *rules.Result) {
	y := asYieldConn(ctx.Conn())
	if y == nil {
		res.Release()
		return
	}
	releaseExchangeSlots(y) // never two exchanges at once, but be sure
	y.slots, y.holding = *res, true
}

// releaseExchangeSlots releases what holdSlots kept on y.
func releaseExchangeSlots(y *yieldConn) {
	if !y.holding {
		return
	}
	y.holding = false
	y.slots.Release()
	y.slots = rules.Result{}
}

// openSlots makes the store of concurrency slots: on Redis when the
// store is, with the configured lease, else in memory.
func (g *Gateway) openSlots(cfg *config.Config) {
	if rs := g.stores.Redis(); rs != nil {
		g.slots = rs.Slots(cfg.ConcurrencyLease)
		return
	}
	g.slots = memory.NewSlots()
}

// closeSlots stops the Redis slots' renewer.
func (g *Gateway) closeSlots() {
	if rs, ok := g.slots.(*redis.Slots); ok {
		rs.Close()
	}
}
