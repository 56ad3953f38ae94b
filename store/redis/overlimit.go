package redis

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// overLimit remembers refusals: a key refused until instant T (local
// clock) is refused again locally until T. Entries are keyed by the policy
// as well as the key, so a changed policy (a config reload) never sees a
// refusal made under the old one (envoyproxy/ratelimit issue #1077). A
// refusal for cost c says nothing about a smaller cost, so an entry only
// answers requests costing at least c.
type overLimit struct {
	shards   [64]olShard
	perShard int
	seed     maphash.Seed
}

type olKey struct {
	p   limit.Policy
	key string
}

type olEntry struct {
	until int64 // local ns: refused before this instant
	at    int64 // local ns when decided
	cost  int64
	d     limit.Decision
}

type olShard struct {
	mu sync.Mutex
	m  map[olKey]olEntry
	_  [40]byte
}

func newOverLimit(size int) *overLimit {
	if size <= 0 {
		return nil
	}
	c := &overLimit{perShard: max(size/64, 1), seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].m = make(map[olKey]olEntry)
	}
	return c
}

func (c *overLimit) shard(key string) *olShard {
	return &c.shards[maphash.String(c.seed, key)&63]
}

// get returns the cached refusal of key under p for cost at now, if any.
// A cost above the capacity is never answered from the cache: its answer
// (never) does not depend on the refusal remembered.
func (c *overLimit) get(key string, p limit.Policy, cost, capacity, now int64) (limit.Decision, bool) {
	if cost > capacity {
		return limit.Decision{}, false
	}
	sh := c.shard(key)
	sh.mu.Lock()
	e, ok := sh.m[olKey{p, key}]
	if ok && now >= e.until {
		delete(sh.m, olKey{p, key})
		ok = false
	}
	sh.mu.Unlock()
	if !ok || cost < e.cost {
		return limit.Decision{}, false
	}
	d := e.d
	d.RetryAfter = time.Duration(e.until - now)
	d.ResetAfter = max(d.ResetAfter-time.Duration(now-e.at), d.RetryAfter)
	return d, true
}

// put remembers a refusal d of cost decided at now; refusals that can never
// pass (RetryAfter Never) are not cached, since they depend on the cost only.
func (c *overLimit) put(key string, p limit.Policy, cost, now int64, d limit.Decision) {
	if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter == limit.Never {
		return
	}
	sh := c.shard(key)
	sh.mu.Lock()
	if len(sh.m) >= c.perShard {
		for k, e := range sh.m {
			if now >= e.until {
				delete(sh.m, k)
			}
		}
		if len(sh.m) >= c.perShard {
			for k := range sh.m { // evict one arbitrary entry
				delete(sh.m, k)
				break
			}
		}
	}
	sh.m[olKey{p, key}] = olEntry{until: now + int64(d.RetryAfter), at: now, cost: cost, d: d}
	sh.mu.Unlock()
}

// len returns the number of entries, expired ones included.
func (c *overLimit) len() int {
	n := 0
	for i := range c.shards {
		c.shards[i].mu.Lock()
		n += len(c.shards[i].m)
		c.shards[i].mu.Unlock()
	}
	return n
}
