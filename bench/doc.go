// Package bench measures tollgate against its peers in the same run. It is
// a separate module so that the peers (golang.org/x/time/rate,
// sethvargo/go-limiter, go-redis/redis_rate, ...) never enter the library's
// go.mod. Commands and figures: ../BENCHMARKS.md. The programs under peers/
// are the Go baselines that ../scripts/bench-gateway.sh serves beside the
// gateway (net/http, fasthttp, gnet). envoyproxy/ratelimit is pinned as a
// tool (go.mod's tool directive): rlsload measures it and envoyrls's
// parity test runs it (scripts/test.sh builds it). flashcrowd is the
// adaptive limits' flash-crowd benchmark (../scripts/bench-adaptive.sh).
// ../scripts/bench.sh runs every headline comparison (these benchmarks,
// rlsload, replay_gen and the scripts' servers) in one interleaved run and
// writes BENCHMARKS.md's first table.
package bench
