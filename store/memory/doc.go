// Package memory is tollgate's in-process store: it applies limit policies
// to keys atomically, safe for concurrent use, in a fixed number of shards
// each guarded by one mutex, with a bound on the number of keys.
//
// # Keys
//
// A key is kept as a 64-bit hash (hash/maphash, seeded per store at
// random, so clients cannot choose keys that collide), never as the string:
// memory per key does not grow with the key's length, and a very long key
// costs nothing extra. The top bits of the hash choose the shard and the
// shard's table keeps the low 56, so with 256 shards (the default) or more
// all 64 bits tell keys apart. Two distinct keys share a state only if
// those bits collide: with a million live keys that chance is about 3 in
// 100 million for the whole store (about 7 in a million with a single
// shard), and an attacker cannot aim for it without the seed.
//
// # Memory
//
// A key with a fixed-size state (every algorithm but the sliding log) costs
// a 32-byte slot (8 bytes of hash and eviction mark, 24 of limit.State) in
// an open-addressing table kept 64–80% full: 44 bytes a key as measured in
// BENCHMARKS.md, so MaxKeys = 1,000,000 is about 50 MB at most. A sliding
// log key costs a map entry, a pointer, a 64-byte header (limit.Log and its
// eviction mark) and 16 bytes per remembered request (at most
// limit.MaxLogLimit of them): up to 160 KiB per key, which is why it is the
// algorithm to keep away from client-chosen keys with large limits.
//
// # One hot key
//
// A token-bucket key decided twice in a row becomes its shard's hot key
// and is decided without the shard's lock: first by compare-and-swap on
// its one integer (the GCRA theoretical arrival time, TAT). When two cores
// keep racing on that integer (four lost races), the key switches to
// batches: each processor takes a batch of tokens from the shared state
// under a mutex, charged to the TAT at once, and then decides from its own
// pocket, a counter on its own cache line, with no write to any line
// another core writes. There are two pockets per processor (a power of
// two, at most 256), and a batch is at most 1024 tokens and at most the
// burst ÷ (8 × pockets), so at most an eighth of the burst is out in
// pockets at any time; about one decision in a batch takes the mutex. The
// pockets cost 128 bytes each (256 a processor) while the key is hot, for
// at most one key a shard.
//
// Exactness: the tokens in pockets were charged when taken, so a client
// never gets past its limit however they are spread; the bucket's refill
// is capped below the burst by what the pockets hold, so a batch taken
// long ago cannot be spent on top of a refilled bucket; and a request is
// refused only after every pocket's tokens were taken back and the bucket
// and all of them together cannot pay for it. A refusal with nothing in
// any pocket (a key being limited, the flood case) is decided lock-free
// from a consistent read of the shared state. A demotion (a sweep, an
// ApplyAll, an eviction) and a new policy for the key (a reload) take
// every batch back first; the sweeper demotes every shard's hot key on
// each pass, so a key that is no longer contended goes back to the
// compare-and-swap loop within a SweepInterval. Two figures are
// approximate: Decision.Remaining counts the bucket and the deciding
// processor's pocket but not the other pockets (low by at most an eighth
// of the burst); and while the bucket is nearly full (within an eighth of
// the burst), tokens spent from a pocket are charged when the pocket is
// next accounted for rather than when spent, so up to that many tokens of
// refill may arrive later than they would have (never earlier); a key
// below that (every key being limited) is decided exactly as by one lock.
//
// Why this does not depend on the processor: the compare-and-swap loop
// alone moves the TAT's cache line between cores on every decision, and a
// lost race is a wasted decision retried; how often that happens depends on
// how a processor arbitrates a contended line (it measured 1.57× one
// x/time/rate limiter on an AMD machine and 0.75× on an Intel one). With
// batches, the steady state writes only the deciding core's own pocket; the
// shared state is written once per batch, under a mutex (a loser waits, it
// does not retry with a wasted decision); and a pocket's compare-and-swap
// is contended only when two goroutines running at once share a pocket,
// which a processor's hint (sync.Pool keeps one per P) makes rare, and
// then costs about what the compare-and-swap loop did
// (BenchmarkHotKeyDesigns measures every processor on one pocket). A
// processor that is unfair between cores can make one core wait longer
// for the mutex, once per batch, but cannot make anyone's decision wrong
// or make a core redo work.
//
// # Expiry and eviction
//
// A state is dropped, losslessly, once it is idle (limit.State.Idle): a
// background sweeper walks one shard at a time every SweepInterval, and
// idle states are also dropped when a decision finds them. Under pressure,
// when a shard is full (MaxKeys/Shards keys) and a new key arrives:
//
//  1. an idle key among those sampled is dropped (nothing is lost);
//  2. failing that, among up to eight sampled keys that are not being
//     limited, the least recently decided is evicted;
//  3. a key being limited, one whose latest decision refused it or left it
//     nothing (Remaining 0), is never evicted before it is idle: that would
//     give a client held at its limit a fresh allowance, and a flood of new
//     keys would be a way to earn one (a hot token-bucket key, decided
//     without the lock, is judged by what it has left when it is written
//     back to its slot, which happens before any eviction in its shard);
//  4. when every key sampled (up to 64 from a random place in the shard) is
//     being limited, the new key is not stored and its request is not
//     decided: Apply and ApplyAll return ErrFull and charge nothing (nginx's
//     limit_req, which evicts its least recently used key even when that
//     key is being limited, refuses the request, 503 by default, only when
//     it cannot allocate a node even then). The rules engine refuses such
//     a request with its store-error status (503 by default), whatever
//     its on_error: allowing it would let a store filled with limited
//     keys switch limiting off for every new client.
//
// Recency is counted in new keys, not in time: each key's slot carries a
// one-byte mark (limited or not, and the shard's epoch at its latest
// decision; a shard's epoch advances every MaxKeys/Shards/32 new keys).
// Evicting a key that is not idle still forgives what it used: a key that
// has something left gets its full allowance early. Stats counts
// evictions, so operators can size MaxKeys, and Full counts new keys that
// found no room.
package memory
