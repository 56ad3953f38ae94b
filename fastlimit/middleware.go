package fastlimit

import (
	"context"
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
// headers. A request a counting rule (rules.Rule.Count) matched is
// charged with the answer next leaves in ctx.Response (Charge), before
// fasthttp writes it; one whose next panics, as 500; one never served
// (a delay its client left) ends its counting reservation
// (rules.Result.Release). A store error is
// logged with the rule engine's logger and handled as the rules' failure
// mode says (rules.Config.OnErrorOf).
//
// The sequence is Decide, Enforce, next, Finish: a handler that needs to
// act between the steps (measure the decision, log it, route first) calls
// them itself, as the gateway does.
func Middleware(engine func() *rules.Engine, next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		e := engine()
		if e == nil {
			next(ctx)
			return
		}
		res := Decide(ctx, e)
		if res.Holds() {
			// Concurrency slots go back when next returns or panics (a
			// body next streams with SetBodyStream is still being sent
			// then: the gateway holds them to the exchange's end).
			defer res.Release()
		}
		if !Enforce(ctx, &res) {
			return
		}
		if res.Counts() {
			serveCounting(ctx, &res, next)
		} else {
			next(ctx)
		}
		Finish(ctx, &res)
	}
}

// serveCounting runs next for a request a counting rule matched, then
// charges its answer (Charge). A next that panics is charged as 500
// Internal Server Error before the panic goes on (fasthttp recovers
// none: a recovering middleware outside this one answers, or the
// program ends), one that ends its goroutine (runtime.Goexit) as no
// answer (status 0).
func serveCounting(ctx *fasthttp.RequestCtx, res *rules.Result, next fasthttp.RequestHandler) {
	ok := false
	defer func() {
		if ok {
			return
		}
		v := recover()
		if v == nil {
			chargeStatus(res, 0) //nolint:errcheck // the engine logs a store error
			return
		}
		chargeStatus(res, fasthttp.StatusInternalServerError) //nolint:errcheck // as above
		panic(v)
	}()
	next(ctx)
	ok = true
	Charge(ctx, res) //nolint:errcheck // the engine logs a store error; the answer goes on
}

// Decide is the engine's decision on ctx's request. A store error is in
// the result (Outcome Errored, refused or not as the rules' failure mode
// says) and already logged by the engine's Logger.
//
// The engine gets context.Background, not ctx: a fasthttp.RequestCtx is
// recycled once its handler returns, and a store that still holds the
// context then (a Redis client's queued command, a log record) would read
// the next request's user values, a data race the race detector has
// seen. Its Done channel is only the server's shutdown, so nothing is
// lost: a store call is bounded by the store's own timeout.
func Decide(ctx *fasthttp.RequestCtx, e *rules.Engine) rules.Result {
	res, _ := e.Decide(context.Background(), Request{Ctx: ctx})
	return res
}

// Enforce carries out res before the request is served. A refused
// request is answered with the refusal (WriteRefusal) and Enforce returns
// false: the handler must not serve it. A delayed one waits its delay;
// if its client closed the connection meanwhile, it is not served, as
// nginx drops a delayed request whose client went away (its 499) and as
// httplimit.Enforce does: it is answered 503 (rules.DetailDelayEnded,
// which the client never reads), the connection closed, and Enforce
// returns false. Otherwise Enforce returns true.
//
// fasthttp does not cancel a request whose client goes away, so the
// delay is waited whole (the engine caps it by rules.Config.MaxDelay);
// the client's departure is seen at its end, by a peek at the socket
// that reads nothing of a next request.
func Enforce(ctx *fasthttp.RequestCtx, res *rules.Result) bool {
	if res.Refused() {
		WriteRefusal(ctx, res)
		return false
	}
	if res.Delay > 0 {
		time.Sleep(res.Delay)
		if clientGone(ctx.Conn()) {
			WriteProblem(ctx, fasthttp.StatusServiceUnavailable, "Service Unavailable", rules.DetailDelayEnded)
			ctx.SetConnectionClose()
			return false
		}
	}
	return true
}

// Finish sets the rate-limit headers (SetHeaders) on the response of a
// request that res admitted, once the handler has written it, when a rule
// matched; they replace any of the same name the handler wrote.
func Finish(ctx *fasthttp.RequestCtx, res *rules.Result) {
	if res.Matched() {
		SetHeaders(&ctx.Response.Header, res)
	}
}
