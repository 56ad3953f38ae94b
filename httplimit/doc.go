// Package httplimit is tollgate's net/http middleware: an adapter of the
// HTTP-stack-free rule engine (package rules) to http.Handler.
//
// Build a rules.Engine over a store, wrap it in a Limiter, and use
// Limiter.Handler as standard middleware (func(http.Handler)
// http.Handler), with plain net/http (Handler(mux)) or with any router
// that takes it: chi's r.Use(l.Handler), gorilla/mux's r.Use(l.Handler). For every request the Limiter asks the engine, sets the
// rate-limit header fields it returns, and then either refuses (status,
// problem+json body; no body for HEAD), waits the shaping delay (capped,
// ending early when the client goes away) and serves, or serves at once.
//
// The Limiter's sequence is three exported steps, [Decide], [Enforce] and
// [Finish], which the gateway's HTTP/2 and gRPC path and forward-auth call
// themselves (fastlimit has the same three for fasthttp), so that every
// front end carries out a decision alike. A delayed request whose client
// goes away is not served, as nginx drops it (its 499): it is counted
// (Limiter.DelaysCancelled) and answered 503, which that client never
// reads; WriteRefusal and WriteProblem write every answer of the front
// ends' own (problem+json, nosniff).
//
// A rule with count (rules.Rule.Count: charge only the answers 401 and
// 403, say) is decided before the handler runs, a key with nothing left
// refused at once, and charged with the handler's answer ([Charge]): the
// Limiter hands such a request's handler a ResponseWriter that charges
// the status as it is written, before the client can read it (200 when
// the handler writes none, 101 when it hijacks the connection, 500 when
// it panics first), and keeps http.Flusher, http.Hijacker and
// http.ResponseController (Unwrap) working. A request no counting rule
// matched gets the ResponseWriter itself and costs nothing more.
// Penalties (rules.Policy.Penalty) are decided before the handler, as any
// refusal, with the time the penalty has left as Retry-After.
//
// The engine can be replaced while serving (Limiter.Swap), e.g. on a
// configuration reload; counters live in the store, so they survive.
package httplimit
