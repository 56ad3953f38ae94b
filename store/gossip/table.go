package gossip

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/tollgate-dev/tollgate/limit"
)

// table is the counter table: every key this node knows of, with its
// shape and the counter of each node that counted it, this node's and
// its peers', in 32 shards locked apart, and the rules by which keys
// enter and leave it. It knows no clock but the times it is given and no
// network: the Store decides on it (decide.go), sends what it lists dirty
// and merges what peers send (gossip.go).
type table struct {
	self    uint32 // this node's id: its slot in every entry
	seed    maphash.Seed
	shards  [32]shard
	max     int           // keys per shard
	evicted atomic.Uint64 // keys evicted to make room (Stats.Evicted)
}

// init readies t for maxKeys keys in all.
func (t *table) init(maxKeys int) {
	t.seed, t.max = maphash.MakeSeed(), max(maxKeys/32, 1)
	for i := range t.shards {
		t.shards[i].m = make(map[string]*entry)
	}
}

func (t *table) shardIndex(key string) int { return int(maphash.String(t.seed, key) & 31) }

type shard struct {
	mu    sync.Mutex
	m     map[string]*entry
	dirty []*entry // entries with counters to send
}

// entry is one key: its shape, the local policy (nil for a key only
// heard of), and every node's counter.
type entry struct {
	key   string
	sh    shape
	slots []slot
	dirty bool  // listed in its shard's dirty list
	heat  int64 // cost changed since last sent: the hottest go first
	used  int64 // when last decided or merged (clock ns): eviction's recency
}

// slot is one node's counter for a key, and what is left to send of it.
type slot struct {
	node  uint32
	c     counter
	sends int32 // rounds it is still to be sent in
	since int64 // when its oldest unsent change was made (Unix ns), or 0
}

// own returns this node's counter in e.
func (e *entry) own(self uint32) counter {
	for i := range e.slots {
		if e.slots[i].node == self {
			return e.slots[i].c
		}
	}
	return counter{}
}

// viewWith sums e's counters for window w, with own in place of this
// node's. A nil e is an empty key.
func (e *entry) viewWith(w int64, self uint32, own counter, sh shape) view {
	var v view
	v.add(own, w)
	if e == nil || e.sh != sh {
		return v
	}
	for i := range e.slots {
		if e.slots[i].node != self {
			v.add(e.slots[i].c, w)
		}
	}
	return v
}

// reshape puts e under another shape (a changed policy, on a reload):
// the counters of the old one mean nothing under it.
func (e *entry) reshape(sh shape) {
	e.sh, e.slots, e.heat = sh, e.slots[:0], 0
}

// slot returns node's slot in e, added if absent.
func (e *entry) slot(node uint32) *slot {
	for i := range e.slots {
		if e.slots[i].node == node {
			return &e.slots[i]
		}
	}
	e.slots = append(e.slots, slot{node: node})
	return &e.slots[len(e.slots)-1]
}

// setOwn stores this node's counter c in e after admitting cost at now,
// to be sent in the next sends rounds; it reports whether e has just been
// listed to be sent (the Store then nudges a round). The caller holds
// shd's lock.
func (t *table) setOwn(shd *shard, e *entry, c counter, cost, now int64, sends int32) bool {
	sl := e.slot(t.self)
	sl.c = c
	sl.sends = sends
	if sl.since == 0 {
		sl.since = now
	}
	e.heat = addSat(e.heat, cost)
	if e.dirty {
		return false
	}
	shd.markDirty(e)
	return true
}

func (shd *shard) markDirty(e *entry) {
	if !e.dirty {
		e.dirty = true
		shd.dirty = append(shd.dirty, e)
	}
}

// newEntry adds key to shd, making room if the shard is full (makeRoom);
// nil when every key that could make room is being limited. The caller
// holds shd's lock.
func (t *table) newEntry(shd *shard, key string, sh shape, now int64) *entry {
	if len(shd.m) >= t.max && !t.makeRoom(shd, now) {
		return nil
	}
	e := &entry{key: key, sh: sh, used: now}
	shd.m[key] = e
	return e
}

// evictScan is how many keys makeRoom looks at, at most (the memory
// store's figure).
const evictScan = 64

// makeRoom makes a place in the full shard shd for a new key, as the
// memory store does: it drops the idle keys among up to evictScan it
// looks at (from a random place: map order), and failing that evicts the
// least recently used of those that are not being limited, one waiting
// to be sent last. A key being limited is never evicted before it is
// idle (that would give its client a fresh allowance, and make a flood of
// new keys a way to earn one); when every key looked at is, it reports
// false. Evicting a key that is not limited forgives what was counted of
// it, here and in this node's view of its peers. The caller holds shd's
// lock.
func (t *table) makeRoom(shd *shard, now int64) bool {
	var (
		victim *entry
		seen   int
	)
	for k, e := range shd.m {
		if e.idle(now) {
			delete(shd.m, k)
		} else if !t.limited(e, now) && (victim == nil || evictFirst(e, victim)) {
			victim = e
		}
		if seen++; seen == evictScan {
			break
		}
	}
	if len(shd.m) < t.max {
		return true
	}
	if victim == nil {
		return false
	}
	delete(shd.m, victim.key)
	t.evicted.Add(1)
	return true
}

// evictFirst reports whether a is to be evicted rather than b: one
// waiting to be sent last, then the least recently used.
func evictFirst(a, b *entry) bool {
	if a.dirty != b.dirty {
		return !a.dirty
	}
	return a.used < b.used
}

// limited reports whether e's key has nothing left at now, on this
// node's view: a fixed window's count at the limit, a sliding window's
// two windows' counts (the estimate weighs the previous one less), a
// token bucket's TAT less than one emission interval from a full burst
// ahead.
func (t *table) limited(e *entry, now int64) bool {
	sh := e.sh
	w := max(now, 0) / sh.period
	v := e.viewWith(w, t.self, e.own(t.self), sh)
	switch sh.alg {
	case limit.AlgFixedWindow:
		return v.cur >= sh.limit
	case limit.AlgSlidingWindow:
		return addSat(v.cur, v.prev) >= sh.limit
	default:
		tat, _ := sh.tokenTAT(v, w)
		return tat-now > sh.period-sh.period/sh.limit
	}
}

// idle reports whether no counter of e counts any more at now (so none
// is worth sending either).
func (e *entry) idle(now int64) bool {
	w := max(now, 0) / e.sh.period
	for i := range e.slots {
		if e.slots[i].c.Win >= w-1 {
			return false
		}
	}
	return true
}

// evict drops shd's idle keys.
func (t *table) evict(shd *shard, now int64) {
	for k, e := range shd.m {
		if e.idle(now) {
			delete(shd.m, k)
		}
	}
}

// sweep drops every idle key: a departed node's counters age out with
// their windows.
func (t *table) sweep(now int64) {
	for i := range t.shards {
		shd := &t.shards[i]
		shd.mu.Lock()
		t.evict(shd, now)
		shd.mu.Unlock()
	}
}
