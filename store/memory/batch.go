package memory

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/tollgate-dev/tollgate/limit"
)

// batches is the state of a contended hot key: the shared GCRA state,
// written only under mu, and one pocket of tokens per processor (about),
// each written by the cores that use it.
//
// A decision takes cost tokens from its pocket by compare-and-swap on the
// pocket's own cache line; no line another core writes is touched. An empty
// pocket is refilled under mu with a batch of tokens charged to the shared
// TAT at once, exactly as if that many requests had been admitted then, so
// what the pockets hold is already counted against the limit: a client never
// gets more than its limit, however the pockets are shared out.
//
// out is the sum of what the pockets were given since each was last
// accounted for, so at least what they still hold. The bucket's refill is
// capped below the burst by out (E = max(tat, now+out·t), in place of
// GCRA's max(tat, now)): tokens waiting in pockets count as tokens in the
// bucket, which therefore never holds more than the burst in all, and a
// batch taken long ago cannot be spent on top of a refilled bucket.
//
// A refusal is decided on the whole state: before refusing, the decision
// takes every pocket's tokens back under mu (out is then 0) and decides
// again; a request is refused only if the bucket and every batch together
// cannot pay for it. A refusal with nothing outstanding (out 0, the usual
// state of a key being limited) is decided from a consistent read of tat
// and out (seq is odd while they are written) without the lock, so a flood
// of refusals writes no shared line either.
//
// Nothing here depends on how fairly a processor arbitrates between cores
// racing for one line: the only compare-and-swap loops are on a pocket
// (contended only by goroutines that share a processor hint, and never
// retried more than the tokens it holds) and the switch to batches; the
// shared state is changed under mu, once per batch, and a lost race there
// is a wait, never a retry with a wasted decision.
//
// The one approximation is the bucket's refill while it is nearly full
// (above the burst minus out): which tokens in a pocket were spent when is
// not recorded, so a pocket's spent tokens are charged as if spent when the
// pocket is next accounted for, and a refill of at most out tokens may come
// that much later. out is at most an eighth of the burst; a key being
// limited is never nearly full, so its refusals are exact. Decision's
// Remaining counts the bucket and the deciding pocket's tokens, not other
// pockets': it is low by at most out.
type batches struct {
	p       limit.TokenBucket // the policy the tokens were taken under
	t       int64             // p's emission interval
	size    int64             // most tokens a pocket is given at once
	mask    uint32
	clock   func() int64
	pockets []pocket
	_       [64]byte

	mu     sync.Mutex
	frozen bool          // demoted: the table slot holds the state (under mu)
	seq    atomic.Uint64 // odd while mu's holder writes tat and out
	tat    atomic.Int64  // every token taken, those in pockets included
	out    atomic.Int64  // tokens given to pockets and not accounted for; -1 frozen
	_      [64]byte
}

// pocket is one processor's tokens, on its own cache lines.
type pocket struct {
	n       atomic.Int64 // tokens left
	granted int64        // under mu: tokens given since last accounted for
	_       [112]byte
}

// hints gives each processor a pocket number: sync.Pool keeps one value per
// P, so a goroutine usually gets its processor's. Which pocket a decision
// uses matters only for speed; any pocket is correct.
var (
	hints    = sync.Pool{New: func() any { h := nextHint.Add(1); return &h }}
	nextHint atomic.Uint32
)

// maxBatch bounds a batch however large the burst.
const maxBatch = 1024

func newBatches(p limit.TokenBucket, clock func() int64) *batches {
	n := 1
	for n < 2*runtime.GOMAXPROCS(0) && n < 256 {
		n <<= 1
	}
	burst := p.Quota().Limit
	b := &batches{
		p:       p,
		t:       p.Rate.Interval(),
		size:    min(max(1, burst/int64(8*n)), maxBatch),
		mask:    uint32(n - 1),
		clock:   clock,
		pockets: make([]pocket, n),
	}
	b.seq.Store(1) // not started: readers take the lock, which startBatches holds
	return b
}

// startBatches switches e to batches, unless it is frozen or switched.
func (s *Store) startBatches(e *hotKey, p limit.TokenBucket) {
	b := e.b.Load()
	if b == nil {
		b = newBatches(p, s.now)
		if !e.b.CompareAndSwap(nil, b) {
			b = e.b.Load()
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		old := e.tat.Load()
		if old == frozen || old == inBatches {
			return
		}
		if e.tat.CompareAndSwap(old, inBatches) {
			b.tat.Store(old)
			b.seq.Add(1)
			return
		}
	}
}

// decideBatched decides a request of a key in batches into d. It reports
// false when the locked path must decide (demoted, or another policy: a
// reload). As on the compare-and-swap path, the clock is read after the
// state it decides on.
func (s *Store) decideBatched(d *limit.Decision, b *batches, p limit.TokenBucket, cost int64) bool {
	if p != b.p {
		return false // the locked path demotes, taking every batch back
	}
	hp := hints.Get().(*uint32)
	i := int(*hp & b.mask)
	hints.Put(hp)
	if cost > 0 {
		pk := &b.pockets[i]
		for {
			v := pk.n.Load()
			if v < cost {
				break
			}
			if pk.n.CompareAndSwap(v, v-cost) {
				b.report(d, s.now(), v-cost)
				return true
			}
		}
		if now, ok := b.refuseUnlocked(d, math.MinInt64, cost); ok {
			if s.recheck == nil {
				return true
			}
			if t := s.recheck(); t <= now {
				return true
			} else if _, ok := b.refuseUnlocked(d, t, cost); ok {
				return true
			}
		}
	}
	return s.refill(d, b, i, cost)
}

// report writes an allowed decision's figures into d: the bucket's at
// now, with the deciding pocket's left tokens.
func (b *batches) report(d *limit.Decision, now, left int64) {
	e := max(b.tat.Load(), now+max(b.out.Load(), 0)*b.t)
	b.p.DecideInto(d, limit.State{A: e, Idle: e}, now, 0)
	if left > 0 {
		d.Remaining = min(d.Remaining+left, d.Limit)
		d.NextUnitAfter = 0
	}
}

// refuseUnlocked writes into d the refusal of cost and reports true, with
// the instant it decided at (the clock's, at least atLeast), if a
// consistent read of the shared state shows nothing in any pocket and too
// little in the bucket.
func (b *batches) refuseUnlocked(d *limit.Decision, atLeast, cost int64) (int64, bool) {
	s1 := b.seq.Load()
	if s1&1 != 0 {
		return 0, false
	}
	tat, out := b.tat.Load(), b.out.Load()
	if out != 0 || b.seq.Load() != s1 {
		return 0, false
	}
	now := max(atLeast, b.clock())
	b.p.DecideInto(d, limit.State{A: tat, Idle: tat}, now, cost)
	return now, !d.Allowed
}

// refill decides under mu: it accounts for pocket i, gives it a batch if
// the bucket has one, and before a refusal takes every pocket's tokens
// back.
func (s *Store) refill(d *limit.Decision, b *batches, i int, cost int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.frozen {
		return false
	}
	now := b.clock()
	b.seq.Add(1)
	defer b.seq.Add(1)
	pk := &b.pockets[i]
	tat, out := b.tat.Load(), b.out.Load()
	all, rechecked := cost == 0, false
	if all { // a peek counts every pocket
		tat, out, now = b.account(b.pockets, tat, out, now)
	} else {
		tat, out, now = b.account(b.pockets[i:i+1], tat, out, now)
	}
	for {
		e := max(tat, now+out*b.t)
		st := limit.State{A: e, Idle: e}
		next := b.p.DecideInto(d, st, now, cost)
		if d.Allowed {
			if g := min(max(cost, b.size), d.Remaining+cost); g > cost && !all {
				// The request and a batch: Remaining+cost is what the
				// bucket holds, so it admits g.
				if withBatch, dg := b.p.Decide(st, now, g); dg.Allowed {
					next = withBatch
					pk.granted = g - cost
					pk.n.Store(g - cost)
					out += g - cost
				}
			}
			b.tat.Store(next.A)
			b.out.Store(out)
			return true
		}
		if !all {
			all = true
			tat, out, now = b.account(b.pockets, tat, out, now)
			continue
		}
		if !rechecked && s.recheck != nil {
			rechecked = true
			if t := s.recheck(); t > now {
				now = t
				continue
			}
		}
		b.tat.Store(tat)
		b.out.Store(out)
		return true
	}
}

// account takes back the tokens left in pockets and charges those spent,
// returning the new tat and out and the instant it read after taking them
// (at least now). Every token spent from a pocket was spent at an instant
// read before it was taken back, so a spent token is charged no earlier
// than it was spent. mu must be held.
func (b *batches) account(pockets []pocket, tat, out, now int64) (int64, int64, int64) {
	var left, granted int64
	for i := range pockets {
		left += pockets[i].n.Swap(0)
		granted += pockets[i].granted
		pockets[i].granted = 0
	}
	if granted == 0 {
		return tat, out, now
	}
	now = max(now, b.clock())
	tat = max(tat, now+out*b.t) - left*b.t
	return tat, out - granted, now
}

// freeze takes every batch back for a demotion and returns the key's TAT.
// Decisions that find the batches frozen go to the locked path.
func (b *batches) freeze() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq.Add(1)
	defer b.seq.Add(1)
	tat, _, _ := b.account(b.pockets, b.tat.Load(), b.out.Load(), 0)
	b.frozen = true
	b.out.Store(-1)
	b.tat.Store(tat)
	return tat
}
