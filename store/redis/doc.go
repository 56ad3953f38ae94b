// Package redis is a limit.Store whose state lives in Redis (standalone or
// Redis Cluster), so that several gateways share one count.
//
// Every decision is one EVALSHA of a Lua script, one script per algorithm
// (token buckets: several decisions in one, see Batching),
// which runs a port of package limit's integer arithmetic in microseconds
// (Lua numbers are doubles, exact below 2^53; Unix time in µs is about
// 1.8e15). Each key's TTL is its state's idle instant, rounded up to the
// millisecond, so expiry never changes a decision. A decision is sent as
// EVALSHA; when the server answers NOSCRIPT (first use, a restart, SCRIPT
// FLUSH, a failover) the client re-sends the script once with EVAL, which
// caches it again. ApplyAll's script holds all five algorithms. Concurrent
// decisions are pipelined automatically (rueidis): many EVALSHAs go out in
// one write (Config.FlushDelay).
//
// # Batching
//
// Token-bucket decisions on a standalone Redis (or through Sentinel) are
// gathered: while four such script calls are in flight, the decisions that
// arrive wait together and go in the next call, up to 64 in one, decided
// one after another by one script (each saved before the next, as separate
// Applys would be) at one instant. A script call's own cost is most of what
// a decision costs Redis, so under load a decision costs Redis less than
// half the CPU it costs alone (BENCHMARKS.md); a lone caller finds a call
// free and waits for nothing. A decision that waits is bounded by the
// calls ahead of it (one in flight, more when over 64 decisions wait) and
// its own, each bounded by Config.Timeout, not by its caller's context
// (the call is every waiting decision's): a caller whose context ends
// meanwhile waits for the call. A key holding something else
// than a bucket's state is answered by the failure mode alone, the others
// in its call decided. Other algorithms and a Redis Cluster make one call
// per decision, ApplyAll and ApplyEach one per set of requests, as before.
//
// # Exactness
//
// The scripts compute exactly what package limit computes when the policy's
// window (or emission interval, Rate.Period/Rate.Count) is a whole number of
// microseconds and the clock is read in whole microseconds; otherwise they
// compute it for the window or interval truncated to the microsecond. The
// sliding window's products (count × window in µs: a million a day is
// 8.6e16, beyond 2^53) are computed exactly in base-2^26 limbs. Limits,
// windows in µs and a bucket's interval × (burst+2) in µs must stay below
// 2^50 (about 35 years of µs); a policy beyond that is refused with an
// error wrapping limit.ErrInvalidPolicy.
//
// # Time
//
// By default the scripts read the Redis server's TIME, so gateways with
// skewed clocks agree. Config.Clock injects the caller's clock instead (the
// conformance vectors use it); key TTLs are then at least Config.MinTTL,
// since an injected clock need not advance at real speed (the script compares
// the stored idle instant itself, so a longer TTL never changes a decision).
//
// # Keys and Redis Cluster
//
// A key is stored as Config.Prefix + key. A key without a Redis hash tag is
// wrapped in one ("{key}"), so the few Redis keys a decision touches share a
// slot. ApplyAll runs all its requests in one script, which in cluster mode
// needs all their keys in one slot: give the keys a common hash tag
// ("rule-a:{client}", "rule-b:{client}"); otherwise ApplyAll returns
// ErrCrossSlot. MOVED and ASK redirects are followed by the client.
//
// # Failures
//
// Each call has a short timeout (Config.Timeout, default 50ms), also one
// that has to reconnect to a stalled server first: a connection attempt is
// closed when the deadline of the decision that started it passes before
// the server's first reply; and a call that waited for an attempt another
// call started is not failed by that call's shorter deadline (it tries
// again within its own). Consecutive
// failures open a circuit breaker, after which decisions are answered at
// once by the failure mode (package failmode: Open,
// Closed or Local, an in-memory store with the same policy) until a probe succeeds: after each cooldown
// the store PINGs Redis in the background, so no caller waits for it. The failure
// mode is chosen per rule with Store.WithFailure; its words ("open",
// "closed", "local") are the rule engine's on_error.
//
// The same answer is given while the store has not connected yet (New does
// not fail for a Redis that is down: it keeps dialing in the background)
// and for an error reply (a key holding a value of another type, a script
// error): a store failure is never an allow the failure mode did not
// choose. Config.Logger gets one line per state change (unreachable,
// connected, breaker opened, closed) and error replies, each kind at most
// once every 10s with a count of the rest, keys hashed. Stats has the
// counters and states a metrics exporter needs.
//
// # Over-limit cache
//
// A key refused until instant T is answered locally, without a round trip,
// until T, with the figures Redis would give. The cache is keyed by the
// policy as well as the key, so a changed policy never sees a refusal made
// under the old one. An entry answers only requests of the refused cost,
// and is forgotten as soon as the key admits anything (through this store
// or its Sync); a refusal is cached only when its Remaining is one below
// its cost (every refusal of cost 1), since only then does Remaining stay
// the same until T. An ApplyAll is answered locally when every one of its
// requests has a cached refusal, with their Merge. Hits are counted in
// Stats.CacheHits.
//
// # Consistency tiers
//
// This package is the strict tier: every decision is one atomic script.
// Package store/eventual decides locally and syncs with Redis through
// Store.Sync; limit.Divide divides a policy by the node count.
package redis
