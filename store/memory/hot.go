package memory

import (
	"math"
	"sync/atomic"

	"github.com/tollgate-dev/tollgate/limit"
)

// A hot key is a token-bucket key decided twice in a row in its shard. Its
// whole state is one integer (the GCRA theoretical arrival time), so while
// it is hot it is decided without the shard's lock, by compare-and-swap on
// that integer. Each shard has at most one.
//
// A compare-and-swap that loses a race is contention: the same integer
// written from several cores, whose cache line then moves between them on
// every decision (how much that costs depends on the processor, which is
// why a CAS loop alone wins on one machine and loses to a mutex on
// another). After contendedAfter lost races the key switches to batches
// (see batches): each core takes a batch of tokens from the shared state
// and decides from it without writing a shared line.
//
// While a key is hot, its hotKey holds the truth and its table slot may be
// stale. Every locked path that reads or removes that slot first demotes
// the key: it freezes the integer (so a compare-and-swap in flight fails),
// takes every batch back, writes the final value back to the table and
// forgets the hotKey. A hotKey is never reused for another key, so a stale
// pointer to it can only ever see its own key's state, and then frozen.
type hotKey struct {
	h     uint64
	tat   atomic.Int64 // the TAT, or frozen, or inBatches
	p     limit.Stateful
	fails atomic.Int32            // compare-and-swap races lost
	b     atomic.Pointer[batches] // set before tat becomes inBatches
}

const (
	// frozen marks a demoted hotKey; no TAT is ever this small.
	frozen = math.MinInt64
	// inBatches marks a hotKey whose state is in its batches.
	inBatches = math.MinInt64 + 1
	// contendedAfter is how many lost compare-and-swap races switch a hot
	// key to batches: one is a coincidence, a few are two cores at it.
	contendedAfter = 4
)

// decideHot decides a token-bucket request lock-free into d if h is the
// shard's hot key. It reports false when the locked path must decide
// instead. (A Decision is a dozen words: it is written in place rather
// than copied up the calls.)
//
// The clock is read after the state: every charge in the state was
// decided at an instant read before it was made, so no refusal comes from
// deciding at an instant older than the state (the bug the locked path's
// shard.last check fixes), and only a Config.Recheck clock is read again
// before refusing.
func (s *Store) decideHot(d *limit.Decision, sh *shard, h uint64, p limit.TokenBucket, cost int64) bool {
	e := sh.hot.Load()
	if e == nil || e.h != h {
		return false
	}
	now := int64(math.MinInt64)
	rechecked := false
	for {
		old := e.tat.Load()
		switch old {
		case frozen:
			return false
		case inBatches:
			return s.decideBatched(d, e.b.Load(), p, cost)
		}
		now = max(now, s.now())
		st := limit.State{A: old, Idle: old}
		next := p.DecideInto(d, st, now, cost)
		if next == st {
			if !d.Allowed && !rechecked && s.recheck != nil {
				rechecked = true
				if t := s.recheck(); t > now {
					now = t
					continue
				}
			}
			return true
		}
		if e.tat.CompareAndSwap(old, next.A) {
			return true
		}
		// Another core charged first: decide again, on its state and at an
		// instant read after it.
		if e.fails.Add(1) >= contendedAfter {
			s.startBatches(e, p)
		}
	}
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
	if tat == inBatches {
		tat = e.b.Load().freeze() // and every batch is taken back
	}
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
