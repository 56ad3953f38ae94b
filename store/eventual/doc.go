// Package eventual is the eventual consistency tier: each node decides
// locally, at in-process speed, against its local view of a key's global
// state, and every sync interval pushes the cost it admitted (the delta)
// to Redis and pulls the global state back (Kong's sync_rate idea).
//
// # Overshoot
//
// Between two syncs a node does not see what the others admitted, so a key
// can be admitted beyond its limit. A node learns of another's admissions
// at most two intervals later (the other pushes at its next sync, this one
// pulls at its own), so the overshoot is bounded by about
//
//	nodes × (requests per node per second) × interval
//
// for steady traffic (up to twice that in the worst phase alignment). A
// node's first view of a key it has not seen is empty until its next sync,
// so a key new to every node at once can overshoot by up to (nodes−1) ×
// min(limit, requests per node in one interval).
//
// BENCHMARKS.md measures it against the formula. Use the strict tier
// (store/redis) where the limit must be exact.
//
// # Clock skew
//
// A node decides on Redis's clock, not its own: Redis charges on its TIME
// (or on the redis.Store's Config.Clock), every sync reply says when, and
// the node keeps the offset between that and the middle of its own
// clock's readings around the round trip (a sync with nothing to push
// reads a key to measure it all the same). Every decision reads the
// node's clock plus that offset, so a node's skew, seconds or minutes,
// does not move its windows: the estimate is off by at most half the last
// sync's round trip plus the clocks' drift over one interval, and that
// error adds at most
//
//	(requests per node per second) × (½ round trip + drift)
//
// to a key's overshoot at a window's edge. Until its first sync (started
// when the Store is created) a node decides on its own clock; the keys it
// sees then are new keys, within the new-key overshoot above. One offset
// serves every key, so the shards of a Redis Cluster must agree on the
// time among themselves (their skew adds to the error). Nodes 30 s
// ahead of Redis and behind it are tested to admit what nodes on Redis's
// clock admit.
//
// A node whose sync fails, wholly or for some keys, keeps deciding on its
// local view and carries the failed keys' deltas to the next sync; the keys
// that synced are settled. (A push that timed out may have reached Redis:
// carried, it is charged twice, an overcount rather than a loss.) A key
// whose policy changes (a config reload) starts from an empty view under
// the new policy and keeps its pending delta, pushed under the new policy.
// The sliding log has no fixed-size state and is refused.
//
// # Simulation
//
// Config.Central replaces Redis by any store with its arithmetic: package
// fleetsim runs a thousand nodes' own Apply and Sync (Interval negative,
// Sync called on a virtual clock) against one in-memory central counter.
package eventual
