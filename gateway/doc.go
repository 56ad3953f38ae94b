// Package gateway is tollgate's edge gateway: a reverse proxy that runs
// every request through the rule engine (package rules) before it reaches
// an upstream, built from one config.Config.
//
// This package is the gateway's lifecycle: New, Start, Reload and the
// file watcher, Shutdown and Close, the admin listener, and the build of
// each configuration's snapshot. It wires packages that hold one concern
// each and never import it: gateway/fastpath and gateway/h2path (the two
// data paths), over gateway/exchange (the snapshot and route types and
// the Core state they share with this package), gateway/observe
// (metrics and logs), gateway/adapt (adaptive controllers and
// concurrency limits) and gateway/conns (connection plumbing);
// gateway/dashfeed feeds the dashboard of gateway/dashboard.
//
// A listener has one of two data paths. By default (listen.http2 off, the
// default without tls) it is served by fasthttp, HTTP/1.1 only, the rule
// engine adapted by package fastlimit. With listen.http2 on (the default
// with tls) it is served by net/http and its HTTP/2: with TLS, ALPN
// offers h2 and http/1.1; without, h2c (prior knowledge, and HTTP/1.1's
// Upgrade: h2c) beside HTTP/1.1. That path runs the same rule engine
// (through package httplimit's request view, header and refusal
// writers), routes and metrics, and proxies through
// httputil.ReverseProxy, to HTTP/1.1 upstreams or, for a route with
// protocol http2, over h2 (https://) or h2c (http://). A route with grpc
// on is a gRPC API: its refusals are gRPC statuses (RESOURCE_EXHAUSTED,
// or UNAVAILABLE for a store failure refused closed) with the rate-limit
// fields as metadata, and rules can key by grpc_service and grpc_method.
// Routes with protocol http2 and gRPC routes need listen.http2 on.
//
// On a TLS listener, both data paths take each connection's JA4
// fingerprint from its ClientHello (GetConfigForClient, package ja4) into
// the connection (conns.YieldConn), for the ja4 key part and matcher;
// no header field sets it, and plain-HTTP requests have none. The
// geoip section's databases (country and asn key parts and matchers,
// looked up for the client IP that client_ip resolves) are opened with
// the configuration and polled every geoip.reload_interval
// (watchGeoIP): a new file serves without a restart, a broken one is
// refused, logged and counted (tollgate_geoip_reload_errors_total).
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
// members files its tiers name and the clients and keys files of its
// except entries (reload.watch), reloading a file once it
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
// charged before the refusing one). A delayed request (a policy's delay
// or burst without nodelay) whose client goes away during the delay is
// never sent upstream, on either data path, as nginx drops it (its 499):
// both count it in tollgate_delays_cancelled_total, as httplimit's and
// forward-auth's DelaysCancelled do, and the access log records it as
// nginx does, status 499 ("client closed request") and 0 bytes, not the
// 503 (rules.DetailDelayEnded) each path writes to the connection no one
// reads any more: a 503 in the log would read as the gateway failing. The
// 503 stays what is written (net/http and fasthttp send no 499; an HTTP/2
// stream the client reset takes nothing). Nothing else reports it by its
// status: it reached no upstream (tollgate_upstream_responses_total and
// the adaptive limits' meters never see it), the refusal log and the
// dashboard count decisions (it is a delayed one), and a counting rule
// (count:) is not charged for it at all, on either path, as for a
// refusal: its statuses ("5xx", "4xx") see neither the 503 nor the 499,
// since the origin gave no answer to count (tollgate replay likewise
// charges no counting rule for a logged 499).
//
// A rule with count (rules.Rule.Count: only the answers 401 and 403, say)
// is decided before the request is proxied, a key with nothing left
// refused at once as by any rule, and charged after the answer, on both
// data paths and for gRPC: with the upstream's status and header fields
// as they arrive, before they go on to the client (so a client that waits
// for its answer before its next request finds it charged); with the
// gateway's own answer when the upstream fails (502, or 504 for a
// timeout, on a gRPC route too, whose answer is then a gRPC status; 503
// when the upstream's connection limits are reached); with 101 for a
// websocket upgrade; as no answer (rules.NoAnswerStatus) when the client
// goes away first. On a gRPC route the answer is its HTTP status and
// header fields as they arrive: a call's grpc-status is among them when
// the call ends at once (a trailers-only answer, as a unary call's error
// usually is), not when it comes in the trailers after messages. A refusal costs the same with count as without: the
// charge is only on the way back from the upstream. Penalties
// (rules.Policy.Penalty) are decided before the answer, as any refusal:
// the refusal log gives the time a penalty has left ("penalty") and
// the dashboard lists the penalties in force. /metrics counts penalties
// started (tollgate_penalties_total), refusals under one
// (tollgate_penalty_refusals_total, besides tollgate_decisions_total's
// refused) and charges made after the answer (tollgate_counted_total).
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
// With listen.http2 on, the listener is net/http's (HTTP/1.1, h2 by ALPN,
// h2c) and a request the client got wrong is answered as above, with the
// gateway's own problem+json, on HTTP/1.1 and HTTP/2 alike: 400 for a
// broken chunked body or a body cut short, 408 for a head (HTTP/1.1) or
// a body that stalls past listen.read_timeout, 413 as above, 431 for a
// header list over listen.max_header_list_size (counted as RFC 9113
// counts it: names and values plus 32 bytes a field). None of them counts
// as an upstream error; an upstream that got part of a body the client
// then failed to send sees its request fail (the gateway aborts it), and
// never answers the client in its stead. What Go's net/http answers
// itself, before any of the gateway's code runs, it answers in plain
// text: on HTTP/1.1, 400 for a malformed head (a field name that is not
// a token, a missing Host), 501 for a transfer coding other than
// chunked, 505 for a version other than 1.x, 431 for a head over four
// times max_header_list_size plus 4 KiB; on HTTP/2, 400 for a
// connection-specific field or a TE other than trailers, a stream reset
// (PROTOCOL_ERROR) for malformed pseudo-header fields, and for a header
// list over four times max_header_list_size a 431 in text/html, or the
// connection closed: GOAWAY PROTOCOL_ERROR when a CONTINUATION frame
// follows the one that crossed that bound, COMPRESSION_ERROR when one
// field alone is that long. A connection that sends nothing within
// read_timeout is closed without an answer (the fasthttp listener
// answers 408); on HTTP/2 a header block that stalls has no stream to
// answer on, and the connection is closed with a GOAWAY after
// listen.idle_timeout.
//
// Rapid reset (CVE-2023-44487): every HTTP/2 stream a client opens is
// decided and charged as a request, even when the client resets it at
// once, so a client opening and resetting streams is refused once over
// its limit and reaches the upstream at most its limit's worth. Go's
// HTTP/2 server runs at most listen.max_concurrent_streams handlers for
// one connection and lets four times as many more streams wait for one;
// a stream reset while it waits is dropped, never decided. Only a
// connection with more streams waiting than that is closed with GOAWAY
// ENHANCE_YOUR_CALM, which takes handlers slower than the client's
// resets (decisions waiting on a stalled store): with decisions in
// memory, 200,000 HEADERS and RST_STREAM on one connection never close
// it (measured; TestRapidResetIsLimited, TestRapidResetEnhanceYourCalm).
package gateway
