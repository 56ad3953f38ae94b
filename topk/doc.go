// Package topk finds the heaviest keys of a stream in fixed memory: the
// Space-Saving algorithm (Metwally, Agrawal and El Abbadi, "Efficient
// Computation of Frequent and Top-k Elements in Data Streams", ICDT 2005).
//
// A Summary holds a fixed number of counters. A key already counted adds
// its weight to its counter; a new key takes the counter with the smallest
// count, inherits that count as its possible overestimate, and adds its
// weight. So every count is an upper bound of the key's true weight, and
// the overestimate is recorded with it:
//
//	Count - Error <= true weight <= Count
//	Error <= N / k
//
// where N is the weight added to the key's shard and k the shard's
// counters (Config.Counters / Config.Shards). Any key whose true weight
// exceeds the smallest count of its shard (Summary.Bound, itself at most
// N/k) is in the summary. With one shard this is the textbook guarantee.
// Shards split keys by hash, each with its own lock and counters, so that
// cores meet less; the bound then holds per shard.
//
// Memory is fixed when the Summary is made: counters, a hash table of
// twice their number, and Config.MaxKeyLen bytes per counter for the key.
// Longer keys are counted by their whole bytes (hash and length) and
// stored truncated (Entry.Truncated). Add allocates nothing, for a key
// seen before or not, so a flood of distinct keys costs neither memory
// nor garbage; an update is O(log k) (a min-heap of the counters).
package topk
