// Package forwardauth is tollgate's forward-auth endpoint: an
// http.Handler for proxies that ask before proxying (nginx's
// auth_request, Traefik's ForwardAuth, Caddy's forward_auth). It adapts
// the rule engine (package rules) as httplimit does: the engine decides,
// builds the rate-limit header fields and the refusal; this package only
// reads the request the proxy describes and answers in a form the proxy
// understands.
//
// # The original request
//
// The engine decides on the original request as the proxy forwards it:
//
//	method          X-Original-Method (nginx style), X-Forwarded-Method (forwarded style)
//	request-target  X-Original-URI (nginx style), X-Forwarded-Uri (forwarded style):
//	                path (decoded, then cleaned by rules.CleanPath) and query
//	host            X-Forwarded-Host (both styles); absent: empty, and
//	                host rules do not match
//	client address  the engine's own rules.ClientIP: X-Forwarded-For,
//	                Forwarded or X-Real-IP, read from trusted proxies only
//	header fields   the auth request's own, which the proxies copy from
//	                the client's request (API keys, plans)
//
// The proxies forward the request-target as the client spelled it
// (nginx's $request_uri, Caddy's {uri}), so the path is decoded and
// cleaned exactly as the gateway's listeners do it: "//api/x",
// "/./api/x", "/x/../api/x", "/%2e/api/x" and "/api%2Fx" are all decided
// as "/api/x", and count against a rule on /api/. The shipped nginx
// snippet sends the origin that same normalized path; Caddy sends the
// target as the client spelled it, which the origin resolves to the
// same resource.
//
// X-Forwarded-Proto is not read: no rule matches on the scheme. Each
// style reads only the fields its proxy sets (overwriting what a client
// sent), never the other style's, which a client could send through the
// proxy untouched. Nothing is trusted by default: a request from a peer
// outside Config.TrustedProxies is answered 403 without being decided
// (every auth request comes from the proxy, so without trust every
// client would share the proxy's address), and the engine reads the
// client's address only from the peers in its own
// rules.ClientIP.TrustedProxies, which should list the same proxies. A
// trusted proxy's request that lacks the method or request-target field,
// or whose fields are malformed, is answered 400 and logged: the
// proxy's configuration is missing a line.
//
// # The answer
//
// The forwarded style (any path but one ending in /nginx; Traefik,
// Caddy): allowed is 200 with the rate-limit header fields (for the
// proxy to copy); refused is the engine's refusal as httplimit sends it,
// 429 with Retry-After, the RateLimit fields, Cache-Control: no-store and
// the problem+json body, which Traefik and Caddy return to the client
// as is.
//
// The nginx style (a path ending in /nginx, e.g. /auth/nginx):
// auth_request understands only 2xx, 401 and 403 (any other status is a
// 500 to the client), so a refusal is answered 403 with the same header
// fields, plus X-Tollgate-Status (the refusal's own status, 429) and
// X-Tollgate-Refusal (the problem+json body, when it is at most 1 KiB of
// printable text). The shipped snippet (examples/forwardauth/nginx.conf)
// captures them with auth_request_set and answers the client from a
// named location with that status, body and fields; a 403 that does not
// carry X-Tollgate-Status (nginx's own, e.g. from deny) stays a 403, and
// the origin's 403 never reaches the named location (error_page does not
// apply to proxied responses unless proxy_intercept_errors is on).
//
// A request that a shaping policy delays is answered once its delay has
// passed, so the proxy holds it for that long (Config.Wait). If the proxy
// gives up first (its client went away), the request is not allowed, as
// on every front end: it is counted (Handler.DelaysCancelled) and
// answered 503, which nobody reads. The sequence is httplimit's
// (Decide, Enforce, Finish), on the original request.
//
// A concurrency policy (rules.AlgConcurrency, nginx's limit_conn) is
// refused: New returns ErrConcurrency naming the rule, and
// `tollgate forward-auth` refuses the file at start and on reload
// (CheckRules). A slot is held until the request it counts ends, and
// the auth subrequest is answered before the request it asks about is
// even sent on: forward-auth never sees that end, so releasing at the
// answer would bound only the auth requests in flight (a limit that
// never bites), and holding the slot would leak it. Limit concurrency
// where the request is served (tollgate serve, httplimit, limit_conn).
// An engine given to Handler.Swap, which cannot refuse it, has its slots
// released as each answer is written.
//
// A rule that counts on the answer (rules.Rule.Count: only failed logins,
// say) is refused the same way, with ErrCount (CheckRules, New, and
// `tollgate forward-auth` at start and on reload, at the count's line;
// CheckRules' RuleError names the field, for each of these refusals):
// the origin's answer goes to the proxy and never to forward-auth, so
// it could not be charged. This is a deliberate difference from `tollgate
// serve` and httplimit, which charge it. Penalties (rules.Policy.Penalty)
// are decided before the answer and work here as on every front end: a
// key under one is refused with the time the penalty has left as
// Retry-After.
//
// A rule that reads the client's TLS fingerprint (a ja4 key part, in
// its key, tiers.identity or an except entry's key list, or a ja4
// matcher in its match, except or cost.by; also a ja4 matcher in the
// top-level except) is refused too, with ErrJA4 (CheckRules, New, and
// `tollgate forward-auth` at start and on reload): the client's TLS
// handshake is with the proxy, which forwards no fingerprint, so the
// key part would always be missing and the matcher never match, and the
// rule would silently limit (or exempt) nothing. This is a deliberate
// difference from `tollgate serve`, which computes JA4 on its TLS
// listeners.
//
// # Serving it
//
// `tollgate forward-auth -config FILE -listen ADDR` serves a Handler from
// the gateway's YAML file (its rules, client_ip, headers, refusal and
// store sections; client_ip.trusted_proxies is both lists above), on the
// memory store or on Redis, reloading the rules on SIGHUP. The snippets
// for nginx, Caddy and Traefik, with what each does when tollgate is
// down, are in examples/forwardauth/.
package forwardauth
