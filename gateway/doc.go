// Package gateway is tollgate's edge gateway: a reverse proxy on fasthttp
// that runs every request through the rule engine (package rules, adapted
// by package fastlimit) before it reaches an upstream, built from one
// config.Config.
//
// The traffic listener serves the data path; a separate admin listener
// (loopback by default) serves /metrics (Prometheus), /healthz, /readyz,
// /config (the running configuration with secrets masked) and, at /, the
// live dashboard (package gateway/dashboard): decision rates, each rule's
// heavy hitters (package topk), the store's state and whatever
// [Gateway.AddStatus] providers report. The refusal log (refusal_log)
// writes sampled, capped "limiting requests" lines. [Gateway.Reload]
// validates a new configuration and swaps it in atomically: routes,
// upstream clients and the rule engine are one immutable snapshot behind an
// atomic.Pointer, and the store is kept, so the counters of unchanged rules
// survive. The gateway also watches its configuration file and the
// members files its tiers name (reload.watch), reloading a file once it
// has kept the same size, modification time and contents for
// reload.settle (1s by default), so that a file caught half written is
// not served; a writer that pauses longer than that can still be caught,
// so replace a watched file by renaming a complete one over it.
// [Gateway.Shutdown] stops accepting and lets in-flight requests finish;
// when its context ends first, it reports how many it cut.
//
// /metrics counts each decision in tollgate_decisions_total by rule,
// policy and outcome: a refused request counts once, as refused, against
// the rule and policy that refused it, and as not_charged against the
// other rules it matched (allowed for a rule of a consistency tier
// charged before the refusing one).
//
// With store.redis the gateway starts whether or not Redis answers: the
// store connects in the background, and until then, and whenever Redis
// fails, each rule answers by its failure mode (the top-level on_error,
// open, closed or local; a strict rule's own), which a reload may change.
// /readyz is 503 while Redis is down and an enforced rule on it fails
// closed (it would refuse everything it matches), naming those rules;
// tollgate_redis_* metrics show the connection, the breaker, failures by
// kind and the decisions each failure mode answered; the store logs each
// change of state once.
//
// The proxy sets X-Forwarded-For to the client's address (appended to the
// incoming list only when the peer is one of client_ip.trusted_proxies, so
// a client cannot plant addresses in it), X-Forwarded-Proto and
// X-Forwarded-Host; Forwarded and X-Real-IP are removed from untrusted
// peers and kept from trusted ones (Forwarded with this hop appended). It
// removes hop-by-hop header fields, streams request and response bodies,
// passes WebSocket upgrades through, and answers 502 (upstream
// unreachable), 503 (upstream connection limit reached for longer than
// the response timeout, the client's share of it reached, or the route's
// adaptive_concurrency limit reached for longer than its max_delay) or
// 504 (no response headers within the response timeout) with an
// application/problem+json body.
//
// Clients that do not read their responses cannot take the upstream
// pool from the others. Each write to a client, on every listener (the
// admin one too), must complete within listen.send_timeout (60s by
// default), as nginx's send_timeout bounds each write, not the whole
// response: a connection whose client takes no byte for that long is
// closed, an HTTP/2 stream whose client grants it no flow-control window
// is reset, and the upstream connection the response held is freed,
// while a large download read slowly but steadily goes on for as long as
// it takes. (listen.write_timeout, off by default, is the other kind of
// bound: fasthttp's and net/http's on a whole response, however steadily
// it is read.) And one client, by its address as the rules find it,
// holds at most upstream.max_conns_per_client of an upstream's pool at
// once (an eighth of upstream.max_conns by default), from the request
// sent to the last byte of its response written: beyond, the gateway
// answers 503 at once, as nginx's limit_conn does, and counts it in
// tollgate_upstream_client_share_refused_total.
//
// The adaptive controllers' origin signals (latency, error_rate,
// in_flight, a response header) and a route's adaptive_concurrency
// latency samples measure only what the upstream answered, or a failure
// to reach it or to get its answer in time, on both data paths: an
// answer the gateway makes itself (400 for a broken request
// body, 408, 413, 431, 429, its own 503) and a client gone before the
// answer are never counted, so one client's bad requests cannot lower
// every client's limit.
//
// What is wrong with a request is the client's, answered before or
// instead of the upstream's: 400 for a field name that is not a token or
// a broken or short body, 408 for a head or body that stalls past
// listen.read_timeout, 413 for a body over listen.max_request_body
// (announced, before any 100 Continue, or counted as a chunked body
// streams), 431 for a head over 8 KiB. fasthttp's own warnings are
// redacted (nothing the client sent is quoted) and limited per kind, with
// a summary of those left out.
//
// HTTP/2 is not offered to clients: fasthttp implements HTTP/1.1 only, and
// fasthttp is the stack that reaches the throughput targets (see
// BENCHMARKS.md); a gateway that needs HTTP/2 to clients can sit behind a
// TLS terminator that speaks it, or use package httplimit on net/http.
package gateway
