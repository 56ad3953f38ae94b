// Package memory is tollgate's in-process store: it applies limit policies
// to keys atomically, safe for concurrent use, in a fixed number of shards
// each guarded by one mutex, with a bound on the number of keys.
//
// # Keys
//
// A key is kept as a 64-bit hash (hash/maphash, seeded per store at
// random, so clients cannot choose keys that collide), never as the string:
// memory per key does not grow with the key's length, and a very long key
// costs nothing extra. Two distinct keys share a state only if their hashes
// collide: with a million live keys that chance is about 3 in 100 million
// for the whole store, and an attacker cannot aim for it without the seed.
//
// # Memory
//
// A key with a fixed-size state (every algorithm but the sliding log) costs
// a 32-byte slot (8 bytes of hash, 24 of limit.State) in an open-addressing
// table kept 64–80% full: 44 bytes a key as measured in BENCHMARKS.md, so
// MaxKeys = 1,000,000 is about 50 MB at most. A sliding log key costs a
// map entry, a pointer, a 56-byte limit.Log header and 16 bytes per
// remembered request (at most limit.MaxLogLimit of them): up to 160 KiB per
// key, which is why it is the algorithm to keep away from client-chosen keys
// with large limits.
//
// # Expiry and eviction
//
// A state is dropped, losslessly, once it is idle (limit.State.Idle): a
// background sweeper walks one shard at a time every SweepInterval, and
// idle states are also dropped when a decision finds them. Under pressure,
// when a shard is full (MaxKeys/Shards keys) and a new key arrives, the
// store first drops idle states it samples, and failing that evicts, among
// a random sample of eight keys of that shard, the one that becomes idle
// soonest: the key closest to its full allowance, whose loss forgives the
// least. Evicting a key that is not idle forgives its debt: that client gets
// a full allowance early. Stats counts evictions so operators can size
// MaxKeys.
package memory
