package fastlimit

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/rules"
)

// Middleware limits requests to next with the engine returned by engine
// (called once per request, so an atomic.Pointer's Load lets the rules be
// swapped while serving). A nil engine limits nothing.
//
// A refused request is answered with the refusal and never reaches next; a
// shaped one waits its delay first; every response carries the rate-limit
// headers. A store error is logged with the rule engine's logger and
// handled as the rules' failure mode says (rules.Config.OnErrorOf).
func Middleware(engine func() *rules.Engine, next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		e := engine()
		if e == nil {
			next(ctx)
			return
		}
		// A store error is already in res (Outcome Errored, refused or
		// not as configured) and logged by the engine's Logger.
		res, _ := e.Decide(ctx, Request{Ctx: ctx})
		if res.Refused() {
			WriteRefusal(ctx, &res)
			return
		}
		if res.Delay > 0 {
			time.Sleep(res.Delay)
		}
		next(ctx)
		if res.Matched() {
			SetHeaders(&ctx.Response.Header, &res)
		}
	}
}
