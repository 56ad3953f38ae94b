package rules

import (
	"hash/maphash"
	"sync"
	"time"
)

// refusalCache remembers the checks of precheck (a penalty key, a
// counting policy's key) known to refuse until an instant, so that a key
// refused again and again (a brute force under its penalty) is refused
// without a store call, as store/redis's over-limit cache spares the
// round trip of a plain rule's repeated refusal. What it remembers
// cannot turn false early: a penalty in force runs at least the time it
// said it had left (a running penalty is never shortened; a tier's
// simultaneous starts only lengthen it), and a counting policy found
// with nothing left has nothing left at least until one unit is back
// (NextUnitAfter) and the full allowance not before ResetAfter, since
// other requests only charge it more. So an entry answers exactly what
// the store would, or a refusal the store would give with a longer
// wait; past its instant the store is asked again. (The exception: a
// counting policy its adaptive controller scales up meanwhile, whose key
// waits out the time it was told.) Times are the engine's clock
// (Config.Now, else monotonic).
type refusalCache struct {
	seed   maphash.Seed
	per    int
	shards [refusalShards]refusalShard
}

const (
	refusalShards = 32
	// refusalEntries bounds the cache; past it an arbitrary entry makes
	// room (it is only a saving).
	refusalEntries = 1 << 16
)

type refusalShard struct {
	mu sync.Mutex
	m  map[string]cachedRefusal
}

// cachedRefusal is a check known to refuse: nothing left until next
// (a penalty ends then, or one unit of the policy is back), the whole
// allowance not back before reset, both Unix ns of the engine's clock.
type cachedRefusal struct {
	next, reset int64
	limit       int64
}

func newRefusalCache() *refusalCache {
	c := &refusalCache{seed: maphash.MakeSeed(), per: refusalEntries / refusalShards}
	for i := range c.shards {
		c.shards[i].m = make(map[string]cachedRefusal)
	}
	return c
}

func (c *refusalCache) shard(key string) *refusalShard {
	return &c.shards[maphash.String(c.seed, key)%refusalShards]
}

// get returns key's entry if it still refuses at now.
func (c *refusalCache) get(key string, now int64) (cachedRefusal, bool) {
	sh := c.shard(key)
	sh.mu.Lock()
	r, ok := sh.m[key]
	if ok && r.next <= now {
		delete(sh.m, key)
		ok = false
	}
	sh.mu.Unlock()
	return r, ok
}

// put remembers that key refuses, from now, for next (and reset) more.
func (c *refusalCache) put(key string, now int64, next, reset time.Duration, limit int64) {
	if next <= 0 {
		return
	}
	r := cachedRefusal{next: now + int64(next), reset: now + int64(max(reset, next)), limit: limit}
	sh := c.shard(key)
	sh.mu.Lock()
	if _, ok := sh.m[key]; !ok && len(sh.m) >= c.per {
		for k := range sh.m {
			delete(sh.m, k)
			break
		}
	}
	sh.m[key] = r
	sh.mu.Unlock()
}
