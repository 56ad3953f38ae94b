// Package fastpath is the gateway's data path on fasthttp, HTTP/1.1
// only (listen.http2 off): its Server's Serve runs each request through
// the rule engine (package fastlimit's Decide, Enforce and Finish),
// proxies it to the route's upstream with a fasthttp.HostClient
// (streaming bodies, hop-by-hop fields removed, X-Forwarded-* set),
// passes WebSocket upgrades through as tunnels, and answers what the
// client got wrong (ReadError, ExpectContinue: 400, 408, 413, 431) and
// what the upstream did not answer (502, 503, 504) with
// application/problem+json.
package fastpath
