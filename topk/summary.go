package topk

import (
	"cmp"
	"errors"
	"hash/maphash"
	"math/bits"
	"slices"
	"sync"
)

// Config sizes a Summary. The zero Config is valid.
type Config struct {
	// Counters is the number of keys the summary tracks, over all
	// shards. Zero means 256. More counters give a smaller error
	// (N/Counters per shard) for 4 + MaxKeyLen + about 64 bytes each.
	Counters int
	// Shards splits the counters into this many independent parts, each
	// with its own lock, chosen by the key's hash. Zero means 1 (the
	// textbook algorithm, one lock). It must be a power of two and at
	// most Counters.
	Shards int
	// MaxKeyLen is how many bytes of a key are kept for Top to return.
	// Longer keys are still told apart (by hash and length) but returned
	// truncated. Zero means 64; at most 65535.
	MaxKeyLen int
	// SeedOf, when set, makes the summary hash keys as SeedOf does, so
	// that one Hash serves both in AddHashed (two summaries of the same
	// keys: by requests and by refusals). Nil: a seed of its own.
	SeedOf *Summary
}

// ErrConfig reports a Config that cannot be used.
var ErrConfig = errors.New("topk: invalid config")

// Summary is a Space-Saving summary of weighted keys. It is safe for
// concurrent use; its memory is fixed by New.
type Summary struct {
	seed   maphash.Seed
	shift  uint // the shard is the hash's top bits
	shards []shard
	keyLen int
}

// shard is one lock's worth of counters.
type shard struct {
	mu    sync.Mutex
	total uint64
	slots []counter
	heap  []int32 // slot indexes, a min-heap by count; len = slots in use
	table []int32 // open addressing by hash: slot index + 1, 0 when empty
	mask  uint64
	keys  []byte // slot i's key bytes at keys[i*keyLen:]
	_     [64]byte
}

// counter is one tracked key.
type counter struct {
	hash  uint64
	count uint64
	err   uint64
	tag   int64
	klen  int // the whole key's length
	pos   int32
}

// Entry is one key of a Summary, as Top returns it.
type Entry struct {
	// Key is the key, at most Config.MaxKeyLen bytes of it.
	Key string
	// Truncated reports that Key is the start of a longer key.
	Truncated bool
	// Count is an upper bound of the key's total weight.
	Count uint64
	// Error bounds the overestimate: the key's true weight is at least
	// Count - Error.
	Error uint64
	// Tag is the tag of the key's latest Add.
	Tag int64
}

// New returns an empty Summary sized by cfg.
func New(cfg Config) (*Summary, error) {
	k := cfg.Counters
	if k == 0 {
		k = 256
	}
	n := cfg.Shards
	if n == 0 {
		n = 1
	}
	kl := cfg.MaxKeyLen
	if kl == 0 {
		kl = 64
	}
	switch {
	case k < 0:
		return nil, errors.Join(ErrConfig, errors.New("counters is negative"))
	case n < 0 || n&(n-1) != 0 || n > k:
		return nil, errors.Join(ErrConfig, errors.New("shards must be a power of two, at most counters"))
	case kl < 0 || kl > 65535:
		return nil, errors.Join(ErrConfig, errors.New("max key length must be between 1 and 65535"))
	}
	s := &Summary{seed: maphash.MakeSeed(), shards: make([]shard, n), keyLen: kl}
	if cfg.SeedOf != nil {
		s.seed = cfg.SeedOf.seed
	}
	s.shift = uint(64 - bits.TrailingZeros(uint(n)))
	per := k / n
	for i := range s.shards {
		sh := &s.shards[i]
		c := per
		if i < k%n {
			c++
		}
		size := 1
		for size < 2*c {
			size <<= 1
		}
		sh.slots = make([]counter, c)
		sh.heap = make([]int32, 0, c)
		sh.table = make([]int32, size)
		sh.mask = uint64(size - 1)
		sh.keys = make([]byte, c*kl)
	}
	return s, nil
}

// Add adds weight to key and records tag as the key's latest (the gateway
// records the key's remaining quota). It allocates nothing.
func (s *Summary) Add(key string, weight uint64, tag int64) {
	add(s, maphash.String(s.seed, key), key, weight, tag)
}

// Hash is key's hash for AddHashed, on this summary and on those made
// with it as their Config.SeedOf.
func (s *Summary) Hash(key string) uint64 { return maphash.String(s.seed, key) }

// AddHashed is Add with key's hash h from Hash (of this summary or of one
// sharing its seed), so that two summaries of the same key hash it once.
// A wrong h makes the key count apart from its other additions; it never
// corrupts the summary.
func (s *Summary) AddHashed(h uint64, key string, weight uint64, tag int64) {
	add(s, h, key, weight, tag)
}

// AddBytes is Add for a key in bytes.
func (s *Summary) AddBytes(key []byte, weight uint64, tag int64) {
	add(s, maphash.Bytes(s.seed, key), key, weight, tag)
}

func add[K string | []byte](s *Summary, h uint64, key K, weight uint64, tag int64) {
	var sh *shard
	if len(s.shards) == 1 {
		sh = &s.shards[0]
	} else {
		sh = &s.shards[h>>s.shift]
	}
	sh.mu.Lock()
	sh.total += weight
	if i, ok := lookup(sh, s.keyLen, h, key); ok {
		c := &sh.slots[i]
		c.count += weight
		c.tag = tag
		sh.down(int(c.pos))
		sh.mu.Unlock()
		return
	}
	var i int32
	var base uint64
	grown := len(sh.heap) < len(sh.slots)
	if grown {
		i = int32(len(sh.heap))
		sh.heap = append(sh.heap, i)
		sh.slots[i].pos = i
	} else {
		// The smallest counter goes to the new key, which inherits its
		// count as its possible overestimate.
		i = sh.heap[0]
		sh.remove(sh.slots[i].hash, i)
		base = sh.slots[i].count
	}
	c := &sh.slots[i]
	c.hash, c.count, c.err, c.tag, c.klen = h, base+weight, base, tag, len(key)
	copy(sh.keys[int(i)*s.keyLen:(int(i)+1)*s.keyLen], key)
	sh.insert(h, i)
	if grown {
		sh.up(int(c.pos))
	} else {
		sh.down(int(c.pos))
	}
	sh.mu.Unlock()
}

// lookup finds key's slot in sh.
func lookup[K string | []byte](sh *shard, keyLen int, h uint64, key K) (int32, bool) {
	stored := min(len(key), keyLen)
	for j := h & sh.mask; ; j = (j + 1) & sh.mask {
		t := sh.table[j]
		if t == 0 {
			return 0, false
		}
		c := &sh.slots[t-1]
		if c.hash == h && c.klen == len(key) {
			off := int(t-1) * keyLen
			if string(sh.keys[off:off+stored]) == string(key[:stored]) {
				return t - 1, true
			}
		}
	}
}

// insert puts slot i in the table under hash h.
func (sh *shard) insert(h uint64, i int32) {
	j := h & sh.mask
	for sh.table[j] != 0 {
		j = (j + 1) & sh.mask
	}
	sh.table[j] = i + 1
}

// remove takes slot i (hash h) out of the table, shifting back the
// entries after it so that no probe sequence is broken.
func (sh *shard) remove(h uint64, i int32) {
	j := h & sh.mask
	for sh.table[j] != i+1 {
		j = (j + 1) & sh.mask
	}
	sh.table[j] = 0
	for n := (j + 1) & sh.mask; sh.table[n] != 0; n = (n + 1) & sh.mask {
		home := sh.slots[sh.table[n]-1].hash & sh.mask
		// The entry at n may move to the hole at j unless its home lies
		// cyclically in (j, n].
		if (n > j && (home <= j || home > n)) || (n < j && home <= j && home > n) {
			sh.table[j], sh.table[n] = sh.table[n], 0
			j = n
		}
	}
}

func (sh *shard) less(a, b int) bool {
	return sh.slots[sh.heap[a]].count < sh.slots[sh.heap[b]].count
}

func (sh *shard) swap(a, b int) {
	sh.heap[a], sh.heap[b] = sh.heap[b], sh.heap[a]
	sh.slots[sh.heap[a]].pos = int32(a)
	sh.slots[sh.heap[b]].pos = int32(b)
}

func (sh *shard) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !sh.less(i, p) {
			return
		}
		sh.swap(i, p)
		i = p
	}
}

func (sh *shard) down(i int) {
	n := len(sh.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && sh.less(r, l) {
			m = r
		}
		if !sh.less(m, i) {
			return
		}
		sh.swap(i, m)
		i = m
	}
}

// Top appends to dst the n keys with the largest counts, largest first,
// and returns it. n <= 0 means every tracked key.
func (s *Summary) Top(dst []Entry, n int) []Entry {
	from := len(dst)
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for _, si := range sh.heap {
			c := &sh.slots[si]
			off := int(si) * s.keyLen
			kl := min(c.klen, s.keyLen)
			dst = append(dst, Entry{Key: string(sh.keys[off : off+kl]), Truncated: c.klen > s.keyLen,
				Count: c.count, Error: c.err, Tag: c.tag})
		}
		sh.mu.Unlock()
	}
	got := dst[from:]
	slices.SortFunc(got, func(a, b Entry) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	if n > 0 && len(got) > n {
		dst = dst[:from+n]
	}
	return dst
}

// Total is the weight added so far, over all keys.
func (s *Summary) Total() uint64 {
	var t uint64
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		t += sh.total
		sh.mu.Unlock()
	}
	return t
}

// Bound is the largest weight a key missing from the summary can have:
// the smallest count of the fullest shard, 0 while every key seen has a
// counter. It is at most Total/Counters per shard.
func (s *Summary) Bound() uint64 {
	var b uint64
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		if len(sh.heap) == len(sh.slots) && len(sh.heap) > 0 {
			b = max(b, sh.slots[sh.heap[0]].count)
		}
		sh.mu.Unlock()
	}
	return b
}

// Reset forgets every key, keeping the memory.
func (s *Summary) Reset() {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.total = 0
		sh.heap = sh.heap[:0]
		clear(sh.table)
		sh.mu.Unlock()
	}
}

// Capacity is the number of counters, over all shards.
func (s *Summary) Capacity() int {
	n := 0
	for i := range s.shards {
		n += len(s.shards[i].slots)
	}
	return n
}
