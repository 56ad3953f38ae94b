// Package fleetsim simulates a fleet of N nodes enforcing one policy
// under each consistency tier (local divided, eventual, gossip, strict),
// in virtual time, on a real access log (tollgate replay -fleet N feeds it
// replay's parsed, keyed, time-ordered requests through replay.Config.Tap),
// and reports per tier against the exact single-counter answer: the
// overshoot (requests the fleet admitted that one counter seeing every
// request refused), the false refusals (the reverse), the worst keys, and
// the messages and bytes coordination cost per node per second.
//
// # The tiers' own code
//
// Nothing here decides or merges: every node is the tier's own store on
// the fleet's virtual clock (the log's time), and only the network is
// modelled. The seams are small exported hooks in the tiers:
//
//	local     store/memory per node, with limit.Divide's share of the
//	          limit: the local tier as the gateway runs it
//	eventual  store/eventual per node, its background sync off
//	          (Interval < 0) and its Sync called by the fleet every
//	          interval; Config.Central stands in for Redis: one central
//	          state per key that adds each pushed delta unconditionally
//	          and returns the state, as the tier's Redis scripts do with
//	          their force flag (central.go: the policy's own Decide on an
//	          unbounded twin that never refuses). The tier's code keeps
//	          the deltas, pushes them, lays them over the pulled state,
//	          and keeps a lost sync's deltas for the next one
//	gossip    store/gossip per node with a Config.Transport instead of
//	          memberlist: the fleet calls Round every interval, and at
//	          once when the store asks for it (Store.Kicked: a change
//	          after a quiet interval); a round's
//	          broadcast is decoded once (gossip.DecodeDelta, the tier's
//	          decoder) and each recipient merges it with
//	          gossip.MergeDelta, the code memberlist's deliveries run
//	strict    one store/memory that every request goes to (store/redis's
//	          scripts run package limit's algorithms, so its answers are
//	          the exact counter's); its traffic is one script call and
//	          reply per request
//
// The exact answer is one store/memory with the policy, seeing every
// request in time order.
//
// # The network
//
// Each node does its periodic work (a gossip round, an eventual sync)
// every Interval at its own phase, drawn at random in [0, Interval) as
// real timers fall. A gossip message reaches each other node Latency
// after it is sent, unless lost (Loss, drawn per message and recipient);
// an eventual sync is lost whole with probability Loss (the round trip
// itself takes no virtual time: it is far shorter than the interval).
// Requests reach nodes by a routing model: a hash of the key (the client
// address, with replay's default key), round robin, random, or regional
// (each key sticks to one node; nodes draw keys in proportion to their
// weights). memberlist's own traffic (probes, push/pull every 10s) is not
// modelled, nor are a gossip fan-out and its relays: the simulated
// gossip tier sends every round to every member, its default.
//
// # Scale
//
// A thousand nodes run on one core because no node does work that cannot
// change a decision. A node whose round sent nothing, or whose eventual
// store holds no key, is not woken until it next decides. A gossip
// delta is merged into a node lazily, when that node next decides on the
// key, and then only the deltas that have reached it by then: the merge
// is a CRDT (idempotent, commutative, associative) and nothing but a
// decision reads the merged view, so merging later changes nothing, and
// the nodes never merge the keys they never decide on (under hash or
// regional routing, all keys but their own; a real node holds them all,
// so its key table, gossip.Config.MaxKeys, fills sooner than a simulated
// one's, and a round's keys, ordered by heat, may pack into messages a
// little differently). Deltas older than two
// windows, which no view reads, are dropped. The eventual tier gets no
// such shortcut: each node syncs every key it holds every interval, the
// tier's real cost, which dominates a long log's simulation.
//
// Messages and bytes are counted as sent: gossip's as the encoded
// messages times the peers (without UDP/IP headers), Redis's estimated
// from the script calls' RESP sizes (resp.go).
package fleetsim
