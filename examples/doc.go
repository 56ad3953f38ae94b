// Package examples holds example tollgate configurations, one per use
// case, each loaded, validated and compiled by this package's tests:
//
//	per-ip-api.yaml        per-IP API protection behind a trusted load balancer
//	api-key-tiers.yaml     API-key plans from a members file, costs by path
//	login-bruteforce.yaml  login attempts per IP and per account
//	write-shaping.yaml     nginx-style shaping of writes, a shadow rule
//	consistency-tiers.yaml strict, eventual and local rules over one Redis
//	forwardauth/           tollgate forward-auth behind nginx, Caddy or Traefik
//	envoy-rls/             a domain in envoyproxy/ratelimit's format, for tollgate envoy-rls
//
// Run one with: tollgate serve -config examples/per-ip-api.yaml
package examples
