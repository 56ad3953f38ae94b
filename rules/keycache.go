package rules

import (
	"hash/maphash"
	"sync"
)

// keyCache interns store keys, so that building the key of a returning
// client does not allocate a string. It holds at most about twice its
// capacity: each shard keeps a current and a previous generation, and
// drops the previous one when the current fills.
type keyCache struct {
	seed     maphash.Seed
	perShard int
	shards   [keyShards]keyShard
}

const keyShards = 16

type keyShard struct {
	mu       sync.Mutex
	cur, old map[string]string
	_        [40]byte // keep shards on separate cache lines
}

func newKeyCache(capacity int) *keyCache {
	if capacity < 0 {
		return nil
	}
	c := &keyCache{seed: maphash.MakeSeed(), perShard: max(capacity/keyShards, 1)}
	for i := range c.shards {
		c.shards[i].cur = make(map[string]string)
	}
	return c
}

// intern returns b as a string, allocating only for a key not seen
// recently.
func (c *keyCache) intern(b []byte) string {
	if c == nil {
		return string(b)
	}
	s := &c.shards[maphash.Bytes(c.seed, b)%keyShards]
	s.mu.Lock()
	if v, ok := s.cur[string(b)]; ok {
		s.mu.Unlock()
		return v
	}
	v, ok := s.old[string(b)]
	if !ok {
		v = string(b)
	}
	if len(s.cur) >= c.perShard {
		s.old, s.cur = s.cur, make(map[string]string, c.perShard)
	}
	s.cur[v] = v
	s.mu.Unlock()
	return v
}
