package gateway

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/fastlimit"
	"github.com/tollgate-dev/tollgate/rules"
)

// serve is the traffic listener's handler: route, decide, then proxy.
func (g *Gateway) serve(ctx *fasthttp.RequestCtx) {
	s := g.snap.Load()
	var ent *entry
	if s.logAccess && g.access != nil {
		ent = g.access.begin(ctx, &s.accessQuery)
		defer g.access.finish(ctx, ent)
	}
	rt := s.match(ctx.Host(), ctx.Path())
	if rt == nil {
		problem(ctx, fasthttp.StatusNotFound, "No route", "no route matches this host and path")
		return
	}
	if max := s.cfg.Listen.MaxRequestBody; max > 0 && int64(ctx.Request.Header.ContentLength()) > max {
		problem(ctx, fasthttp.StatusRequestEntityTooLarge, "Request body too large", "the request body exceeds listen.max_request_body")
		return
	}
	var res rules.Result
	var now time.Time // after the decision: the upstream exchange's start
	if s.engine != nil {
		// fastlimit.Middleware's sequence, its steps called here to
		// time the decision and log it.
		t0 := monoNow()
		res = fastlimit.Decide(ctx, s.engine)
		took := time.Since(t0)
		now = t0.Add(took)
		g.m.decisionTime.Observe(took.Seconds())
		if ent != nil {
			ent.result(&res)
		}
		if res.Holds() {
			defer holdSlots(ctx, &res)
		}
		if !fastlimit.Enforce(ctx, &res) {
			yieldBeforeNextRead(ctx)
			return
		}
		if res.Delay > 0 {
			now = time.Time{} // the delay made it stale
		}
	}
	// Checked on the way to the upstream only: a refusal forwards
	// nothing, and skips the scan of the head.
	if !validFieldNames(ctx.Request.Header.RawHeaders()) {
		problem(ctx, fasthttp.StatusBadRequest, "Bad Request", "a header field name is not a token")
		ctx.SetConnectionClose()
		return
	}
	switch {
	case rt.demo:
		demo(ctx)
	case isUpgrade(&ctx.Request.Header):
		// The upstream's answer, 101 or a refusal, goes to the client as
		// a response of its own, rate-limit headers added.
		g.websocket(ctx, s, rt)
	default:
		g.proxy(ctx, s, rt, now)
	}
	fastlimit.Finish(ctx, &res)
}

// problem answers with an RFC 9457 application/problem+json body,
// written by fastlimit.WriteProblem (nosniff, no-store, no body for
// HEAD), the writer of the gateway's refusals.
func problem(ctx *fasthttp.RequestCtx, status int, title, detail string) {
	fastlimit.WriteProblem(ctx, status, title, detail)
}
