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
// refusal made under the old one (envoyproxy/ratelimit issue #1077).
//
// An entry answers only what Redis would answer, figure for figure: a
// request of the same cost (a larger one waits longer, a smaller one may
// pass), only while the key has admitted nothing since (any admission
// forgets the entry), and only for a refusal whose Remaining is one below
// its cost, the one case in which Remaining stays the same until T (it
// never falls while nothing is admitted, and reaching the cost is what
// admits the request). The durations are those of the refusal less the
// time since.
//
// A refusal and an admission of the same key may cross: the refusal,
// decided first, arrives after the admission forgot the key. So each
// request notes its shard's admission count before going to Redis (get
// returns it), and its refusal is not remembered if that key was admitted
// since, or if too many admissions passed to tell.
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
	mu     sync.Mutex
	m      map[olKey]olEntry
	admits uint64           // admissions forgotten so far
	recent [olRecent]uint64 // hashes of the keys of the last admissions, by admits % olRecent
	_      [40]byte         // 128 bytes: two cache lines of its own
}

// olRecent is how many admissions a shard remembers for refusals in flight.
const olRecent = 8

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

func (c *overLimit) shard(key string) (*olShard, uint64) {
	h := maphash.String(c.seed, key)
	return &c.shards[h&63], h
}

// admittedSince reports whether the key of hash h may have been admitted
// since the shard's admission count was epoch. The shard's lock must be
// held.
func (sh *olShard) admittedSince(epoch, h uint64) bool {
	if sh.admits-epoch > olRecent {
		return true
	}
	for a := epoch; a != sh.admits; a++ {
		if sh.recent[a%olRecent] == h {
			return true
		}
	}
	return false
}

// get returns the cached refusal of key under p for cost at now, if any,
// and the epoch to record Redis's answer with when there is none. A cost
// above the capacity is never answered from the cache: its answer (never)
// does not depend on the refusal remembered.
func (c *overLimit) get(key string, p limit.Policy, cost, capacity, now int64) (limit.Decision, uint64, bool) {
	sh, _ := c.shard(key)
	sh.mu.Lock()
	epoch := sh.admits
	e, ok := sh.m[olKey{p, key}]
	if ok && now >= e.until {
		delete(sh.m, olKey{p, key})
		ok = false
	}
	sh.mu.Unlock()
	if !ok || cost > capacity || cost != e.cost || now < e.at {
		return limit.Decision{}, epoch, false
	}
	d := e.d
	elapsed := time.Duration(now - e.at)
	d.RetryAfter = time.Duration(e.until - now)
	d.ResetAfter = max(d.ResetAfter-elapsed, 0)
	d.NextUnitAfter = max(d.NextUnitAfter-elapsed, 0)
	return d, epoch, true
}

// getAll answers a batch from the cache when every request has a cached
// refusal: their Merge is then the batch's decision. With any request
// unknown, the most restrictive figures are unknown too, and Redis
// decides. It fills epochs, one per request, for recordBatch.
func (c *overLimit) getAll(reqs []limit.Request, enc []args, now int64, epochs []uint64) (limit.Decision, bool) {
	var out limit.Decision
	all := true
	for i, r := range reqs {
		d, epoch, ok := c.get(r.Key, r.Policy, r.Cost, enc[i].capacity, now)
		epochs[i] = epoch
		if !all || !ok {
			all = false
			continue
		}
		d.Policy, d.Index = r.Policy, i
		if i == 0 {
			out = d
		} else {
			out = limit.Merge(out, d)
		}
	}
	if !all {
		return limit.Decision{}, false
	}
	return out, true
}

// record takes note of d, decided by Redis for a request of cost at now
// that get found at epoch: an admission of a positive cost forgets the
// key's entry (its state has changed), and a refusal whose figures hold
// until its retry instant is remembered, unless the key was admitted
// since epoch. A refusal that can never pass (RetryAfter Never) is not
// cached, since it depends on the cost only.
func (c *overLimit) record(key string, p limit.Policy, cost, now int64, epoch uint64, d limit.Decision) {
	if d.Allowed {
		if cost > 0 {
			c.forget(key, p)
		}
		return
	}
	if d.RetryAfter <= 0 || d.RetryAfter == limit.Never || d.Remaining != cost-1 {
		return
	}
	sh, h := c.shard(key)
	sh.mu.Lock()
	if sh.admittedSince(epoch, h) {
		sh.mu.Unlock()
		return
	}
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
	d.Policy, d.Index = nil, 0 // the caller's to set
	sh.m[olKey{p, key}] = olEntry{until: now + int64(d.RetryAfter), at: now, cost: cost, d: d}
	sh.mu.Unlock()
}

// recordBatch is record for request i of a batch decided as one. A key
// that appears twice in the batch is forgotten rather than remembered: its
// later request was decided on the earlier one's charge, which a refused
// batch takes back.
func (c *overLimit) recordBatch(reqs []limit.Request, i int, now int64, epoch uint64, d limit.Decision) {
	r := reqs[i]
	for j := range reqs {
		if j != i && reqs[j].Key == r.Key {
			c.forget(r.Key, r.Policy)
			return
		}
	}
	c.record(r.Key, r.Policy, r.Cost, now, epoch, d)
}

// forget drops the entry of key under p, and counts an admission of key
// for the refusals in flight.
func (c *overLimit) forget(key string, p limit.Policy) {
	sh, h := c.shard(key)
	sh.mu.Lock()
	delete(sh.m, olKey{p, key})
	sh.recent[sh.admits%olRecent] = h
	sh.admits++
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
