// Package examples holds example tollgate configurations, one per use
// case, each loaded, validated and compiled by this package's tests and
// run through tollgate check as shipped (TestEveryExamplePassesTollgateCheck;
// forwardauth/traefik.yaml, Traefik's own format, checked as YAML):
//
//	per-ip-api.yaml        per-IP API protection behind a trusted load balancer
//	api-key-tiers.yaml     API-key plans from a members file, costs by path
//	login-bruteforce.yaml  failed logins per IP and per TLS fingerprint, a penalty (tls/: its self-signed pair)
//	write-shaping.yaml     nginx-style shaping of writes, a shadow rule
//	consistency-tiers.yaml strict, eventual and local rules over one Redis
//	adaptive-origin.yaml   per-IP limits that follow the origin's health
//	gossip-fleet.yaml      a fleet sharing its counters by gossip, no Redis
//	http2-grpc.yaml        HTTP/2, h2c and a gRPC route
//	per-key-concurrency.yaml    at most N requests of a key in flight (algorithm: concurrency)
//	gradient-concurrency.yaml   a route's upstream bounded by a gradient limit (routes[].adaptive_concurrency)
//	exempt-monitoring.yaml      health checks, monitoring ranges and internal keys exempt from a per-IP limit
//	per-country-api.yaml   per-country API limits, a stricter one for cloud networks (geoip-example.mmdb)
//	forwardauth/           tollgate forward-auth behind nginx, Caddy or Traefik
//	envoy-rls/             a domain in envoyproxy/ratelimit's format, for tollgate envoy-rls
//
// Run one with: tollgate serve -config examples/per-ip-api.yaml
package examples
