package rules

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// reservations is the engine's table of the cost its counting rules'
// admitted requests have reserved and not yet been charged (Rule.Count):
// a counting policy's peek at Decide passes only when what the store has
// left, less what is reserved on the key, covers the request's cost, and
// the request then reserves its cost until its Result.Charge (counted or
// not) or its end without one (Result.Release, or a refusal of its
// group after the peek, or a store error). So on one engine the requests
// admitted against a key never exceed what it had left: "at most the
// limit", whatever is in flight.
//
// The peek and the reservation are apart (a store call between them),
// and a request charged and released in between would be counted twice
// (in the store's answer and no longer in pending) or, worse, not at
// all: a peek that reads the store before the charge and the table
// after the release sees its cost in neither. So each peek first
// watches the key (watch: the released total as it was), and the
// reservation counts every release since then as still pending: never
// fewer than the truth, at worst a few more under concurrency on the
// key.
//
// The table is bounded (reserveEntries keys, entries drop as soon as
// nothing is reserved or watched on them): a key that finds its shard
// full is peeked as before, without reservation (limit plus what is in
// flight), never refused because of the table. And it heals: a key
// whose reservations have not all ended for reserveTTL in a row (a
// front end that failed to end one, or a key never idle that long)
// forgets them, and the reservations it forgot end as no-ops (their
// generation is gone).
type reservations struct {
	seed   maphash.Seed
	per    int
	gen    atomic.Uint64
	shards [reserveShards]reserveShard
}

const (
	reserveShards = 64
	// reserveEntries bounds the keys with reservations in flight.
	reserveEntries = 1 << 20
	// reserveTTL is how long a key's reservations may go without all
	// ending before the key forgets them.
	reserveTTL = 10 * time.Minute
	// reserveEvict is how many entries a full shard looks at for a
	// forgotten one to make room.
	reserveEvict = 8
)

type reserveShard struct {
	mu sync.Mutex
	m  map[string]pendingCost
	_  [48]byte // a shard a cache line of its own (8 + 8 + 48)
}

// pendingCost is one key's entry.
type pendingCost struct {
	pending  int64  // cost reserved by admitted requests not yet ended
	released int64  // cost of every reservation ended, ever (for watchers)
	watchers int64  // peeks between their watch and their reserve
	gen      uint64 // the generation of the reservations pending counts
	since    int64  // when pending last became nonzero (engine clock)
}

func (p *pendingCost) idle() bool { return p.pending == 0 && p.watchers == 0 }

func newReservations() *reservations {
	t := &reservations{seed: maphash.MakeSeed(), per: reserveEntries / reserveShards}
	for i := range t.shards {
		t.shards[i].m = make(map[string]pendingCost)
	}
	return t
}

func (t *reservations) shard(key string) *reserveShard {
	return &t.shards[maphash.String(t.seed, key)%reserveShards]
}

// heal forgets p's reservations when they have lasted past reserveTTL.
func (t *reservations) heal(p *pendingCost, now int64) {
	if p.pending > 0 && now-p.since > int64(reserveTTL) {
		p.pending = 0
		p.gen = t.gen.Add(1)
	}
}

// watch registers a peek of key about to be made: it returns the
// released total to give reserve, and false when the table has no room
// for the key (the peek goes without reservation).
func (t *reservations) watch(key string, now int64) (int64, bool) {
	sh := t.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	p, ok := sh.m[key]
	if !ok {
		if len(sh.m) >= t.per && !t.evict(sh, now) {
			return 0, false
		}
		p.gen = t.gen.Add(1)
	}
	t.heal(&p, now)
	p.watchers++
	sh.m[key] = p
	return p.released, true
}

// evict drops an entry of the full shard sh whose reservations are past
// reserveTTL, if one of the first reserveEvict looked at is.
func (t *reservations) evict(sh *reserveShard, now int64) bool {
	n := 0
	for k, p := range sh.m {
		if p.watchers == 0 && now-p.since > int64(reserveTTL) {
			delete(sh.m, k)
			return true
		}
		if n++; n >= reserveEvict {
			break
		}
	}
	return false
}

// reserve ends the watch of key (watch returned released) with the peek
// that found remaining: when remaining, less the cost reserved and the
// cost released since the watch, covers cost, it reserves cost and
// returns the reservation's generation (non-zero). left is what the
// request found available.
func (t *reservations) reserve(key string, now, released, remaining, cost int64) (gen uint64, left int64) {
	sh := t.shard(key)
	sh.mu.Lock()
	p := sh.m[key]
	t.heal(&p, now)
	p.watchers--
	left = remaining - p.pending - (p.released - released)
	if left >= cost {
		if p.pending == 0 {
			p.since = now
		}
		p.pending += cost
		gen = p.gen
	}
	if p.idle() {
		delete(sh.m, key)
	} else {
		sh.m[key] = p
	}
	sh.mu.Unlock()
	return gen, left
}

// unwatch ends the watch of key without a reservation (the peek failed,
// or refused).
func (t *reservations) unwatch(key string) {
	sh := t.shard(key)
	sh.mu.Lock()
	if p, ok := sh.m[key]; ok {
		p.watchers--
		if p.idle() {
			delete(sh.m, key)
		} else {
			sh.m[key] = p
		}
	}
	sh.mu.Unlock()
}

// release ends the reservation of cost on key of generation gen: the
// request was charged (once the store has it) or ended without a charge.
func (t *reservations) release(key string, gen uint64, cost int64) {
	sh := t.shard(key)
	sh.mu.Lock()
	if p, ok := sh.m[key]; ok && p.gen == gen {
		p.pending = max(p.pending-cost, 0)
		p.released += cost
		if p.idle() {
			delete(sh.m, key)
		} else {
			sh.m[key] = p
		}
	}
	sh.mu.Unlock()
}

// unreserve ends the reservations of res.applied[from:to] (Charge, once
// the store has the charges, or the request's end without one).
func (r *Result) unreserve(from, to int) {
	if !r.reserving {
		return
	}
	still := false
	for i := 0; i < r.n; i++ {
		a := r.at(i)
		if a.resGen == 0 {
			continue
		}
		if i < from || i >= to {
			still = true
			continue
		}
		r.e.pending.release(a.key, a.resGen, a.cost)
		a.resGen = 0
	}
	r.reserving = still
}
