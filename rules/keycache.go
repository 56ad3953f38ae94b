package rules

import (
	"hash/maphash"
	"sync/atomic"
)

// keyCache interns store keys, so that building the key of a returning
// client does not allocate a string.
//
// It is a set-associative table of interned keys, indexed by the key's
// 64-bit hash: a key lives in one of the keyWays slots of its set. A hit
// is a hash, a few atomic loads and one comparison of the bytes, without
// a lock, so one hot key decided on several cores at once does not meet
// here (the memory store decides a hot token bucket without a lock too).
// A miss allocates the key and puts it in a free slot of the set, or in
// place of one chosen by the hash when the set is full. A collision costs
// an allocation, never a wrong key. The table has twice the capacity's
// slots (rounded up to a power of two), so up to about half the capacity
// of live keys nearly all hit, and it never holds more keys than slots.
type keyCache struct {
	seed  maphash.Seed
	sets  uint64 // a power of two
	slots []atomic.Pointer[keyEntry]
}

// keyWays is how many slots a set has: 4 pointers, half a cache line.
const keyWays = 4

// keyEntry is an interned key with its hash, which a lookup compares
// before the bytes.
type keyEntry struct {
	hash uint64
	key  string
}

func newKeyCache(capacity int) *keyCache {
	if capacity < 0 {
		return nil
	}
	n := keyWays
	for n < 2*capacity {
		n <<= 1
	}
	return &keyCache{seed: maphash.MakeSeed(), sets: uint64(n / keyWays), slots: make([]atomic.Pointer[keyEntry], n)}
}

// intern returns b as a string, allocating only for a key not in the
// cache.
func (c *keyCache) intern(b []byte) string {
	if c == nil {
		return string(b)
	}
	h := maphash.Bytes(c.seed, b)
	set := c.slots[(h&(c.sets-1))*keyWays:][:keyWays]
	free := -1
	for i := range set {
		e := set[i].Load()
		if e == nil {
			if free < 0 {
				free = i
			}
			continue
		}
		if e.hash == h && e.key == string(b) {
			return e.key
		}
	}
	if free < 0 {
		free = int(h>>62) % keyWays // the hash's top bits pick whom to replace
	}
	e := &keyEntry{hash: h, key: string(b)}
	set[free].Store(e)
	return e.key
}
