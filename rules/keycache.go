package rules

import (
	"hash/maphash"
	"sync"
)

// keyCache interns store keys, so that building the key of a returning
// client does not allocate a string. It is indexed by the key's 64-bit
// hash and checks the bytes, so a collision costs an allocation, never a
// wrong key. It holds at most about twice its capacity: each shard keeps a
// current and a previous generation, and drops the previous one when the
// current fills.
type keyCache struct {
	seed     maphash.Seed
	perShard int
	shards   [keyShards]keyShard
}

const keyShards = 16

type keyShard struct {
	mu       sync.Mutex
	cur, old map[uint64]string
	_        [40]byte // keep shards on separate cache lines
}

func newKeyCache(capacity int) *keyCache {
	if capacity < 0 {
		return nil
	}
	c := &keyCache{seed: maphash.MakeSeed(), perShard: max(capacity/keyShards, 1)}
	for i := range c.shards {
		c.shards[i].cur = make(map[uint64]string)
	}
	return c
}

// intern returns b as a string, allocating only for a key not seen
// recently.
func (c *keyCache) intern(b []byte) string {
	if c == nil {
		return string(b)
	}
	h := maphash.Bytes(c.seed, b)
	s := &c.shards[h%keyShards]
	s.mu.Lock()
	if v, ok := s.cur[h]; ok && v == string(b) {
		s.mu.Unlock()
		return v
	}
	v, ok := s.old[h]
	if !ok || v != string(b) {
		v = string(b)
	}
	if len(s.cur) >= c.perShard {
		s.old, s.cur = s.cur, make(map[uint64]string, c.perShard)
	}
	s.cur[h] = v
	s.mu.Unlock()
	return v
}
