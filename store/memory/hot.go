package memory

import (
	"math"
	"sync/atomic"

	"github.com/tollgate-dev/tollgate/limit"
)

// A hot key is a token-bucket key decided twice in a row in its shard. Its
// whole state is one integer (the GCRA theoretical arrival time), so while
// it is hot it is decided without the shard's lock, by compare-and-swap on
// that integer: a key hammered from every core moves one cache line per
// decision instead of contending for a mutex. Each shard has at most one.
//
// While a key is hot, its hotKey holds the truth and its table slot may be
// stale. Every locked path that reads or removes that slot first demotes
// the key: it freezes the integer (so a compare-and-swap in flight fails),
// writes the final value back to the table and forgets the hotKey. A
// hotKey is never reused for another key, so a stale pointer to it can
// only ever see its own key's TAT, which only grows, and then frozen.
type hotKey struct {
	h   uint64
	tat atomic.Int64
	p   limit.Stateful // the token bucket that promoted it, to mark it on demotion
}

// frozen marks a demoted hotKey; no TAT is ever this small.
const frozen = math.MinInt64

// decideHot decides a token-bucket request lock-free if h is the shard's
// hot key. It reports false when the locked path must decide instead.
func (s *Store) decideHot(sh *shard, h uint64, p limit.TokenBucket, now, cost int64) (limit.Decision, bool) {
	e := sh.hot.Load()
	if e == nil || e.h != h {
		return limit.Decision{}, false
	}
	rechecked := false
	for {
		old := e.tat.Load()
		if old == frozen {
			return limit.Decision{}, false
		}
		st := limit.State{A: old, Idle: old}
		next, d := p.Decide(st, now, cost)
		if next == st {
			// A refusal decided with an instant read before other cores
			// charged may be stale (the bug the locked path's shard.last
			// check fixes): look at the clock once more before refusing.
			if !d.Allowed && !rechecked {
				rechecked = true
				if t := s.later(); t > now {
					now = t
					continue
				}
			}
			return d, true
		}
		if e.tat.CompareAndSwap(old, next.A) {
			return d, true
		}
		// Another core charged first: decide again, at a fresh instant so
		// that losing races never leaves this request deciding in the past.
		now = max(now, s.now())
	}
}

// later reads the clock again before a refusal: Config.Recheck when
// set, the store's clock otherwise.
func (s *Store) later() int64 {
	if s.recheck != nil {
		return s.recheck()
	}
	return s.now()
}

// promote makes h, whose table slot holds st under p, the shard's hot key,
// if its state is a token bucket's. The shard's lock must be held.
func (sh *shard) promote(h uint64, st limit.State, p limit.Stateful, now int64) {
	if st.B != 0 || st.A != st.Idle || st.A == 0 {
		return
	}
	sh.demote(now)
	e := &hotKey{h: h, p: p}
	e.tat.Store(st.A)
	sh.hot.Store(e)
}

// demote writes the hot key's state back to its table slot and forgets
// it. Its eviction mark is that of a peek at now: limited if nothing is
// left then (the lock-free decisions keep no mark). The shard's lock must
// be held.
func (sh *shard) demote(now int64) {
	e := sh.hot.Load()
	if e == nil {
		return
	}
	sh.hot.Store(nil)
	tat := e.tat.Swap(frozen) // every charge that won its CAS is in tat
	if i := sh.states.find(e.h); i >= 0 {
		st := limit.State{A: tat, Idle: tat}
		_, d := e.p.Decide(st, now, 0)
		sh.states.slots[i].st = st
		sh.states.slots[i].setMark(sh.markFor(d))
	}
}

// demoteKey demotes the hot key if it is h. The shard's lock must be held.
func (sh *shard) demoteKey(h uint64, now int64) {
	if e := sh.hot.Load(); e != nil && e.h == h {
		sh.demote(now)
	}
}
