// Package gossip is the gossip consistency tier: nodes share their
// counters with each other over hashicorp/memberlist, with no central
// store. Each node decides locally, at in-process speed, against its own
// counter plus the merged view of every other node's, and every gossip
// interval sends the counters that changed since the last round.
//
// # Counters and merge
//
// For each key every node owns one counter: the cost it admitted in the
// current window and in the previous one (a G-counter per window, windows
// aligned to the Unix epoch on the fleet's time, below). A node changes
// only its own counter; copies
// of the others' are merged by maximum, window by window, keeping the two
// latest windows. The merge is idempotent, commutative and associative, so
// a duplicated, reordered or late message never counts twice, and two
// sides of a partition merge, when it heals, into the sum of what each
// admitted. A node's view of a key is the sum over nodes.
//
// # Algorithms
//
//	fixed_window    one window of the policy's length; the view is the
//	                sum of every node's count in the current window
//	sliding_window  the current and previous windows' sums, blended by
//	                the policy's own estimate
//	token_bucket    GCRA over epochs of one burst period τ (burst ×
//	                emission interval T): each node counts the cost it
//	                admitted in the epoch (A) and keeps a credit register
//	                M, so that TAT = M + T × ΣA, with M the largest
//	                register of the epoch, at least the previous epoch's
//	                TAT and at least the epoch's start
//
// The token bucket's register is the GCRA written in sums: admitting c at
// now turns TAT = M + T·A into max(TAT, now) + T·c = M' + T·(A + c) with
// M' = max(M, now − T·A), so a node admitting sets its register to M'
// (computed on its view) and adds c to its count. Registers merge by
// maximum and counts by the G-counter, so the merge stays a CRDT; on
// fresh views it is exactly the single-counter GCRA, and since the TAT
// never runs more than τ ahead of an admission, an epoch of length τ
// forgets nothing that still counts. A register sampled on a stale view
// is too high by the cost the node had not heard of: the key is that
// much stricter until it goes idle, which repays the overshoot the stale
// decision made.
//
// The sliding log (a log per key) and the leaky bucket (a level and its
// last update, which do not add up across nodes) cannot be gossiped:
// Apply and ApplyAll refuse them with ErrUnsupported, naming the
// algorithm, and CheckPolicy lets a configuration refuse them before any
// node starts.
// Nothing is silently degraded.
//
// Each decision is the policy's own Decide (package limit) applied to the
// state the merged view amounts to, so the gossip tier decides as the
// memory and Redis stores do on the same counts.
//
// # Rounds
//
// Every Interval (default 100ms) a node sends the counters changed since
// the last round to every member, or to Fanout random ones that relay
// what was new to them. A change made when no round has carried a fresh
// change for an interval (a burst after a quiet spell) is sent at once,
// without waiting for the tick; under steady traffic rounds stay one per
// interval, and a change is sent Retransmit times either way. A message is at most MessageBytes (default 1400,
// one UDP packet), a round at most RoundBytes per peer, hottest keys
// first (the cost changed since last sent); a quiet key sends nothing. A
// changed counter is sent in Retransmit rounds after its last change
// (default 3); counters go whole, so a lost packet is also repaired by
// the key's next change. Every PushPullInterval (default 10s) memberlist
// exchanges full states with a random member, which also brings a joining
// or returning node up to date. Packets go over the package's own
// memberlist transport (UDP and TCP on one port, as memberlist's), which
// spends a buffer of a packet's size per packet received where
// memberlist's allocates 64 KiB: at 32 nodes that was most of a round's
// CPU (BENCHMARKS.md).
//
// # Warm-up
//
// A node with Seeds refuses to decide (ErrNotWarm) until its first full
// state exchange, at join: a node restarted with an empty view would
// otherwise admit a whole limit of its own. New joins in the background
// (a seed that accepts and does not answer holds a join for memberlist's
// TCP timeout, 10s) and retries every second while alone. A node that
// comes back under its old name takes its own counter back from its
// peers. A node without seeds (or whose only seed is itself) is warm at
// once; one whose seeds never answer stays cold until another node joins
// it. Ready tells when the node is warm. The gateway (package storeopen)
// answers ErrNotWarm by the rule's failure mode: open allows, closed
// refuses, local decides in that gateway alone.
//
// # Overshoot
//
// Between rounds a node does not see what the others admitted, so a key
// can be admitted beyond its limit by about
//
//	nodes × (requests per node per second) × interval
//
// for steady traffic (a change waits up to one interval on its node and
// a network hop). With Fanout set, multiply the interval by the rounds
// of relay, about log(nodes)/log(fanout+1). BENCHMARKS.md measures it.
//
// # Clock skew
//
// Nodes add up their counters window by window, so they must agree on
// when a window starts: on their own clocks, two nodes 1.5 s apart (1 s
// windows) each counted the other's admissions in windows it had left,
// and each enforced the whole limit alone (40/s against 20/s; 28/s at
// 0.5 s). So a node decides, counts and sends on the fleet's time: its
// clock (Config.Clock) plus an offset, from 0 to MaxSkew (30 s), that
// only grows. Every message is stamped with its sender's fleet time, and
// a stamp ahead of the receiver's raises its offset to match: the fleet
// runs on its fastest member's clock, a node behind takes it up from the
// first message it hears (at the latest its join's state exchange, before
// it decides anything), and a node ahead moves the others up to its own
// when they first hear it. Store.Offset tells a node's offset. Nodes 0.5,
// 1.5, 3 and 20 s apart, either way, are tested to admit together what
// nodes on one clock admit, within the overshoot below (three real
// processes, 20 requests a second to each for 4 s against 20 per 1 s
// window: 85 to 108 admitted at 0, +1.5 s and −3 s or at 0, +20 s and
// −0.5 s, 97 on one clock; each alone, 171 to 195).
//
// Taking up a later time ends the window a node is in early, once: a
// node joining ahead of the fleet lets each key admit up to one more
// limit in that window. The offset is at most MaxSkew over a node's whole
// life, so stamps, forged ones on a plaintext fleet included, end at most
// MaxSkew's worth of windows early on a node, and none of them moves its
// own counter (see Bad input). A message stamped more than MaxSkew from
// the receiver's fleet time, either way, is dropped and counted
// (Stats.Dropped.Skew): a node whose clock is further than MaxSkew from
// the fastest one's is not heard, and the two sides decide apart (keep
// the fleet's clocks in sync, with NTP or the like, to well within
// MaxSkew). The fleet's time moves at the rate of its fastest clock; a
// node's offset grows with the drift of its clock from that one, so a
// badly drifting clock reaches MaxSkew in time. Messages of wire version
// 1 (no stamp) are still accepted, and read on the receiver's time; a
// node of an earlier release refuses version 2 as malformed, so while a
// fleet is upgraded its old and new nodes decide apart.
//
// # Key table
//
// MaxKeys bounds the keys a node holds, its own and those learned from
// its peers, in 32 shards. A new key finding its shard full takes the
// place of an idle key (no counter in the current or previous window) or,
// failing that, of the least recently used one, among up to 64 looked
// at, that is not being limited (its view at the limit: a fixed window's
// count, a sliding window's two counts, a token bucket's burst), one
// waiting to be sent last: the memory store's rule. A flood of new keys
// thus never locks out new clients, nor frees a client held at its limit;
// what it evicts forgets what was counted of a key that had some left
// (Stats.Evicted). Only when every key looked at is being limited is a
// new key refused (ErrFull; a learned one is dropped, Dropped.Full).
//
// # Departures and partitions
//
// A node that leaves or dies stops sending, but its counters stay in the
// others' views until their windows end (no sudden free quota), then age
// out with the key. A node restarted under its name, at its old address
// or another (a new port, a rescheduled container), is a member again
// once its old incarnation has been dead a second, and Stats counts each
// name once, by its current state. During a partition each side decides on what it
// knows (so a key can admit up to one limit per side); when it heals,
// push/pull and the next rounds merge the views without double counting.
//
// # Bad input
//
// Messages are versioned and length-prefixed (see codec.go). A message
// that fails to decode, claims a count beyond four times the limit, or a
// window starting more than MaxSkew (30 s, the clock difference allowed
// between nodes) after the receiver's now is dropped whole and counted
// in Stats.Dropped; with Key set, memberlist drops anything not
// sealed with it, counted as Unauthenticated. Counts saturate; none is
// ever negative or wrapped.
//
// A node's own counter is written by that node alone. A received copy of
// it is taken only while the node warms up (a node restarted under its
// name takes its counter back), and never one naming a window after the
// node's current one: that is dropped and counted (Future), since merged
// it would move the counter to a later, empty window and the node's own
// admissions would land where no view counts them. So on a plaintext
// fleet no packet makes a node forget what it admitted: each node holds
// the key to its limit on its own admissions at least. (A forger can
// still add counts, which makes keys stricter, or hide another node's
// counts from the receiver for up to MaxSkew with a later window in that
// node's name: set Key wherever the network is not trusted.)
//
// A stream (TCP: a push/pull's full state, a fallback ping) is read
// before it is authenticated: memberlist reads a sealed one whole, up to
// the 20 MiB it may announce, before decrypting it. So the transport
// reads each stream's head itself (streamgate.go) and closes at once,
// unread, one that announces more than MaxStateBytes (default 8 MiB;
// Dropped.Oversize), one that would take what the streams being read
// announced over StateBytesInFlight (default twice MaxStateBytes) or the
// streams open over 128 (Dropped.Busy), and one of a kind no node sends
// (a plaintext stream when there is a key: Unauthenticated; a label, a
// compressed stream or a user message: Malformed). A stream admitted
// reads no more than it announced, and a second after the last large one
// closes, its memory is returned to the system. A stranger flooding the
// gossip port thus costs a node at most about three times
// StateBytesInFlight; the log lines such traffic causes are throttled by
// the gateway (one per kind per 10 s, with a count).
//
// # Simulation
//
// Config.Transport replaces memberlist (transport.go): the Store then
// gives each round's messages to the Transport, its owner calls Round
// and Sweep on its own clock and delivers messages with DecodeDelta and
// MergeDelta, the code memberlist's deliveries run. Package fleetsim
// drives a thousand nodes this way on a virtual clock and network.
//
// # Shared values
//
// Besides counters, a node can publish small named values from 0 to 1
// (PublishValue; an adaptive controller's factor) that every member keeps
// per node, merged by the latest stamp, and read as the lowest fresh one
// (LowestValue). See values.go.
package gossip
