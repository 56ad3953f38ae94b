// Package fastlimit adapts tollgate's rule engine (package rules) to
// fasthttp (github.com/valyala/fasthttp), and so to Fiber and other
// frameworks built on it. It is the HTTP/1.1 data path of tollgate's edge
// gateway (a listener with listen.http2 off), offered as a library; the
// gateway's HTTP/2 path is on net/http, with package httplimit.
//
// It writes no rule, key, header or refusal logic of its own: [Request]
// presents a *fasthttp.RequestCtx to [rules.Engine.Decide] without
// allocating, [SetHeaders] copies the engine's header fields to the
// response, and [WriteRefusal] writes the engine's refusal (status,
// problem+json body, no body for HEAD). [Middleware] puts them together
// around a fasthttp.RequestHandler.
//
// [Middleware]'s sequence is [Decide], [Enforce], the handler, [Finish],
// httplimit's three steps for fasthttp; the gateway's HTTP/1.1 path calls
// them itself. fasthttp has no per-request cancellation when a client
// goes away, so a shaped (delayed) request waits its whole delay, which
// the engine caps by rules.Config.MaxDelay; a client that closed its
// connection meanwhile is seen then, and its request is not served, as
// on every front end (nginx's 499).
//
// A rule with count (rules.Rule.Count) is decided before the handler and
// charged with the answer the handler leaves in ctx.Response ([Charge]),
// before fasthttp writes it to the client; a handler that panics is
// charged as 500. The gateway's HTTP/1.1 path charges the same way,
// with the upstream's answer or its own 502/504. A request no counting
// rule matched costs nothing more. Penalties (rules.Policy.Penalty) are
// decided before the handler, with the time left as Retry-After.
package fastlimit
