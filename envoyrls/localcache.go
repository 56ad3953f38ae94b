package envoyrls

import "sync"

// overCache is envoyproxy/ratelimit's local cache (LOCAL_CACHE_SIZE_IN_BYTES):
// the keys found over their limit, each until its window ends (a key
// names its window, so an entry never outlives it), answered OVER_LIMIT
// without a round trip. Its bytes are bounded: an entry costs its key's
// length and entryOverhead; when full, expired entries go first, then
// any, until a tenth of the budget is free.
type overCache struct {
	mu    sync.Mutex
	m     map[string]int64 // key → Unix ns at which it ends
	bytes int
	max   int
}

// entryOverhead is an entry's bytes beyond its key's: the map's slot,
// the string header and the instant.
const entryOverhead = 64

func newOverCache(maxBytes int) *overCache {
	return &overCache{m: make(map[string]int64), max: maxBytes}
}

// has reports whether key is over its limit at now (Unix ns).
func (c *overCache) has(key string, now int64) bool {
	c.mu.Lock()
	end, ok := c.m[key]
	if ok && end <= now {
		delete(c.m, key)
		c.bytes -= len(key) + entryOverhead
		ok = false
	}
	c.mu.Unlock()
	return ok
}

// add records key over its limit from now until end (Unix ns).
func (c *overCache) add(key string, now, end int64) {
	cost := len(key) + entryOverhead
	if cost > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; ok {
		c.m[key] = end
		return
	}
	if c.bytes+cost > c.max {
		c.evict(now)
	}
	c.m[key] = end
	c.bytes += cost
}

// evict frees a tenth of the budget: entries ended at now first, then
// any.
func (c *overCache) evict(now int64) {
	target := c.max - c.max/10
	for k, end := range c.m {
		if c.bytes <= target {
			return
		}
		if end <= now {
			delete(c.m, k)
			c.bytes -= len(k) + entryOverhead
		}
	}
	for k := range c.m {
		if c.bytes <= target {
			return
		}
		delete(c.m, k)
		c.bytes -= len(k) + entryOverhead
	}
}
