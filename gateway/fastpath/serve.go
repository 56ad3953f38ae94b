package fastpath

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/fastlimit"
	"github.com/tollgate-dev/tollgate/gateway/conns"
	"github.com/tollgate-dev/tollgate/gateway/exchange"
	"github.com/tollgate-dev/tollgate/gateway/observe"
	"github.com/tollgate-dev/tollgate/rules"
)

// Serve is the traffic listener's handler: route, decide, then proxy.
func (g *Server) Serve(ctx *fasthttp.RequestCtx) {
	s := g.Snap.Load()
	var ent *observe.Entry
	if s.LogAccess && g.Access != nil {
		ent = g.Access.Begin(ctx, &s.AccessQuery)
		defer g.Access.Finish(ctx, ent)
	}
	rt := s.Match(ctx.Host(), ctx.Path())
	if rt == nil {
		problem(ctx, fasthttp.StatusNotFound, "No route", "no route matches this host and path")
		return
	}
	if max := s.Cfg.Listen.MaxRequestBody; max > 0 && int64(ctx.Request.Header.ContentLength()) > max {
		problem(ctx, fasthttp.StatusRequestEntityTooLarge, "Request body too large", "the request body exceeds listen.max_request_body")
		return
	}
	var res rules.Result
	var now time.Time // after the decision: the upstream exchange's start
	if s.Engine != nil {
		// fastlimit.Middleware's sequence, its steps called here to
		// time the decision and log it.
		t0 := conns.MonoNow()
		res = fastlimit.Decide(ctx, s.Engine)
		took := time.Since(t0)
		now = t0.Add(took)
		g.M.DecisionTime.Observe(took.Seconds())
		if ent != nil {
			ent.Result(&res)
		}
		if res.Holds() {
			defer conns.HoldSlots(ctx, &res)
		}
		if !fastlimit.Enforce(ctx, &res) {
			if !res.Refused() { // a delay its client left
				g.M.DelaysCancelled.Inc()
				if ent != nil {
					ent.ClientLeft()
				}
			}
			conns.YieldBeforeNextRead(ctx)
			return
		}
		if res.Delay > 0 {
			now = time.Time{} // the delay made it stale
		}
	}
	// Checked on the way to the upstream only: a refusal forwards
	// nothing, and skips the scan of the head.
	if !ValidFieldNames(ctx.Request.Header.RawHeaders()) {
		problem(ctx, fasthttp.StatusBadRequest, "Bad Request", "a header field name is not a token")
		ctx.SetConnectionClose()
		fastlimit.Charge(ctx, &res) //nolint:errcheck // the engine logs a store error
		return
	}
	switch {
	case rt.Demo:
		exchange.Demo(ctx)
	case isUpgrade(&ctx.Request.Header):
		// The upstream's answer, 101 or a refusal, goes to the client as
		// a response of its own, rate-limit headers added.
		g.websocket(ctx, s, rt)
	default:
		g.proxy(ctx, s, rt, now)
	}
	// A counting rule is charged with the answer in ctx.Response: the
	// upstream's status and fields (a websocket's 101), or the
	// gateway's own for an upstream that failed (502, 503, 504) or a
	// client body it could not read. fasthttp writes it once Serve
	// returns: charged before the client reads it. A refusal returned
	// above and costs nothing more with count than without.
	fastlimit.Charge(ctx, &res) //nolint:errcheck // the engine logs a store error
	fastlimit.Finish(ctx, &res)
}

// problem answers with an RFC 9457 application/problem+json body,
// written by fastlimit.WriteProblem (nosniff, no-store, no body for
// HEAD), the writer of the gateway's refusals.
func problem(ctx *fasthttp.RequestCtx, status int, title, detail string) {
	fastlimit.WriteProblem(ctx, status, title, detail)
}
