package replay

import (
	"math"
	"reflect"
	"slices"

	"github.com/tollgate-dev/tollgate/limit"
)

// slot is one simulated policy instance with its own per-key state: a
// user's policy, the exact sliding log shadowing a sliding window counter,
// or an unbounded copy measuring the capacity each key needed.
//
// Two slots of one policy (a sliding window's exact shadow and a user's
// sliding log of the same limit and window, say) share one column and one
// decision per request: the same algorithm on the same requests decides
// the same, so it runs once (see simulator.decide).
type slot struct {
	stateful limit.Stateful
	logged   limit.Logged
	idx      int // index into the simulator's stateful or logged columns
	memo     int // index into the simulator's per-request decision memo
	// The algorithm by its concrete type, so that decide calls it
	// directly rather than through the interface.
	kind slotKind
	tb   limit.TokenBucket
	lb   limit.LeakyBucket
	fw   limit.FixedWindow
	sw   limit.SlidingWindow
	sl   limit.SlidingLog
}

// slotKind is a slot's algorithm, for a direct call; kindOther calls
// through the interface.
type slotKind uint8

const (
	kindOther slotKind = iota
	kindTokenBucket
	kindLeakyBucket
	kindFixedWindow
	kindSlidingWindow
	kindSlidingLog
)

// run is one user policy's simulation and its totals.
type run struct {
	spec   Policy
	engine *engineRun // a gateway rule set instead of one policy
	main   slot
	shadow *slot // sliding_window only: the exact log on the same limit
	unb    *slot // with suggestions: the same algorithm, never refusing
	// needAdjust converts an unbounded decision to the capacity needed:
	// need = Limit − Remaining − needAdjust (1 for the leaky bucket,
	// whose Limit is burst+1).
	needAdjust int64
	seamIdx    int // fixed_window: column of the seam tracker, else -1
	seamWindow int64

	requests, refused int64

	// Sliding window counter versus exact log.
	compared, differ, falseAllow, falseRefuse int64

	// The worst seam burst: most cost a fixed window admitted within any
	// span of one window length.
	seamMax          int64
	seamKey          string
	seamFrom, seamTo int64
}

// keyStat is the summary every distinct key keeps, as the report reads
// it (see simulator.stat).
type keyStat struct {
	name           string
	requests, cost int64
	first, last    int64
	peakSec        int64
	peakMin        int64
}

// Each key's fixed-size data lives in one record of int64 words in
// simulator.slab, so that a request touches a few adjacent cache lines:
// the summary words below, then 3 words of limit.State per stateful slot,
// then 2 words of keyOutcome per run (3 with suggestions: need).
const (
	wRequests = iota
	wCost
	wFirst
	wLast
	wSec // current second index
	wSecN
	wPeakSec
	wMin // current minute index
	wMinN
	wPeakMin
	wPending // events queued for release, not yet applied
	wSerial  // the record's serial number (see retire)
	statWords
)

// keyOutcome is one key's fate under one run.
type keyOutcome struct {
	refused  int64 // refusals
	firstRef int64 // first refusal, Unix ns (0: none)
	need     int64 // capacity needed never to refuse (with suggestions)
}

// grow extends s by n zero elements without a temporary slice, doubling
// its capacity when it is full (append grows large slices by a quarter,
// which copies a slab of 200,000 records many times over).
func grow[T any](s []T, n int) []T {
	if len(s)+n > cap(s) {
		s = slices.Grow(s, max(n, len(s)))
	}
	s = s[:len(s)+n]
	clear(s[len(s)-n:])
	return s
}

// simulator runs every policy over the ordered event stream.
type simulator struct {
	runs      []*run
	nStateful int
	nLogged   int
	nSeam     int
	suggest   bool

	index *keyTable
	names []string                              // by key id
	tap   func(t int64, key string, cost int64) // Config.Tap
	// slab holds each key's record of stride words (see statWords); the
	// states of key k start at k*stride+statWords, its outcomes at
	// k*stride+outWords.
	slab     []int64
	stride   int
	outWords int
	outWidth int // words per outcome: 3 with suggestions, else 2 (no need)
	// Columns of variable-size state, key-major: key k's at k*n + i.
	logs   []limit.Log
	seams  []seamQueue
	tracks map[int32]*series // per-key timelines of tracked keys

	// Retirement (Config.MaxKeys): ids of retired records to reuse, the
	// live count, when to try again, and what retired keys leave behind.
	maxKeys  int
	free     []int32
	live     int
	retireAt int
	serial   int64
	retired  *retiredStats

	series *series
	track  map[string]bool

	// The decision of each distinct slot for the request being applied:
	// memo[i] is valid when memoAt[i] is that request's number (events).
	// Only slots sharing their column (sharedSlot) use it.
	memoAt     []int64
	memo       []memoEntry
	sharedSlot []bool

	events int64
	sink   int64 // see touch
	sweepN int64
	now    int64
}

// sweepEvery is how many events pass between sweeps that free the memory
// of idle sliding logs and seam trackers.
const sweepEvery = 1 << 18

func newSimulator(policies []Policy, engine *engineRun, engineName string, suggest bool, track []string, maxKeys, top int) *simulator {
	s := &simulator{index: newKeyTable(), suggest: suggest, maxKeys: maxKeys}
	var made []*slot
	shared := map[int]bool{}
	addSlot := func(p limit.Policy) *slot {
		for _, o := range made {
			if samePolicy(o.policy(), p) {
				shared[o.memo] = true
				c := *o
				return &c
			}
		}
		sl := &slot{memo: len(made)}
		switch q := p.(type) {
		case limit.Stateful:
			sl.stateful, sl.idx = q, s.nStateful
			s.nStateful++
		case limit.Logged:
			sl.logged, sl.idx = q, s.nLogged
			s.nLogged++
		}
		switch q := p.(type) {
		case limit.TokenBucket:
			sl.kind, sl.tb = kindTokenBucket, q
		case limit.LeakyBucket:
			sl.kind, sl.lb = kindLeakyBucket, q
		case limit.FixedWindow:
			sl.kind, sl.fw = kindFixedWindow, q
		case limit.SlidingWindow:
			sl.kind, sl.sw = kindSlidingWindow, q
		case limit.SlidingLog:
			sl.kind, sl.sl = kindSlidingLog, q
		}
		made = append(made, sl)
		return sl
	}
	if engine != nil {
		s.runs = append(s.runs, &run{spec: Policy{Name: engineName}, engine: engine, seamIdx: -1})
	}
	for _, p := range policies {
		r := &run{spec: p, seamIdx: -1}
		r.main = *addSlot(p.Policy)
		switch q := p.Policy.(type) {
		case limit.SlidingWindow:
			if q.Limit <= limit.MaxLogLimit {
				r.shadow = addSlot(limit.SlidingLog{Limit: q.Limit, Window: q.Window})
			}
		case limit.FixedWindow:
			r.seamIdx, r.seamWindow = s.nSeam, int64(q.Window)
			s.nSeam++
		}
		if suggest {
			u, adj := unbounded(p.Policy)
			if u != nil {
				r.unb, r.needAdjust = addSlot(u), adj
			}
		}
		s.runs = append(s.runs, r)
	}
	s.memoAt = make([]int64, len(made))
	s.memo = make([]memoEntry, len(made))
	s.sharedSlot = make([]bool, len(made))
	for i := range made {
		s.sharedSlot[i] = shared[i]
	}
	s.outWords = statWords + 3*s.nStateful
	s.outWidth = 2
	if suggest {
		s.outWidth = 3 // need, too
	}
	s.stride = s.outWords + s.outWidth*len(s.runs)
	s.retired = newRetiredStats(len(s.runs), top)
	s.retireAt = maxKeys
	s.series = newSeries(len(s.runs))
	if len(track) > 0 {
		s.track = make(map[string]bool, len(track))
		s.tracks = make(map[int32]*series, len(track))
		for _, k := range track {
			s.track[k] = true
		}
	}
	return s
}

// unbounded returns p's algorithm with a capacity no log reaches, so that
// it never refuses: with no refusal an algorithm's state does not depend
// on its capacity, so Limit − Remaining of each decision is exactly the
// capacity this key needed at that instant for p never to refuse it.
func unbounded(p limit.Policy) (limit.Policy, int64) {
	const huge = int64(1) << 40
	bucketCap := func(r limit.Rate) int64 {
		// Keep capacity × interval far from saturation.
		return min(huge, (math.MaxInt64>>2)/max(r.Interval(), 1))
	}
	switch q := p.(type) {
	case limit.FixedWindow:
		return limit.FixedWindow{Limit: huge, Window: q.Window}, 0
	case limit.SlidingWindow:
		return limit.SlidingWindow{Limit: huge, Window: q.Window}, 0
	case limit.SlidingLog:
		// DecideLog enforces no MaxLogLimit; the log holds what the window
		// holds, which is what a large limit would hold.
		return limit.SlidingLog{Limit: huge, Window: q.Window}, 0
	case limit.TokenBucket:
		return limit.TokenBucket{Rate: q.Rate, Burst: bucketCap(q.Rate)}, 0
	case limit.LeakyBucket:
		return limit.LeakyBucket{Rate: q.Rate, Burst: bucketCap(q.Rate), Mode: limit.Police}, 1
	}
	return nil, 0
}

// intern returns the id of key, adding it on first sight. key is only
// copied (allocated) the first time.
func (s *simulator) intern(key []byte) int32 { return s.internHashed(key, s.index.hash(key)) }

// internHashed is intern for a key whose hash (keyTable.hash) is h.
func (s *simulator) internHashed(key []byte, h uint64) int32 {
	if id, ok := s.index.get(key, h); ok {
		return id
	}
	if s.maxKeys > 0 && s.live >= s.retireAt {
		s.retire()
	}
	name := string(key)
	var id int32
	if n := len(s.free); n > 0 {
		id = s.free[n-1]
		s.free = s.free[:n-1]
		s.names[id] = name
		clear(s.slab[int(id)*s.stride : (int(id)+1)*s.stride])
		clear(s.logs[int(id)*s.nLogged : (int(id)+1)*s.nLogged])
		clear(s.seams[int(id)*s.nSeam : (int(id)+1)*s.nSeam])
	} else {
		id = int32(len(s.names))
		s.names = append(s.names, name)
		s.slab = grow(s.slab, s.stride)
		s.logs = grow(s.logs, s.nLogged)
		s.seams = grow(s.seams, s.nSeam)
	}
	s.index.put(key, h, id)
	s.live++
	if s.track[name] {
		s.tracks[id] = newSeries(len(s.runs))
	}
	w := s.slab[int(id)*s.stride:]
	w[wSec], w[wMin] = -1, -1
	s.serial++
	w[wSerial] = s.serial
	return id
}

// stat returns key k's summary.
func (s *simulator) stat(k int32) keyStat {
	w := s.slab[int(k)*s.stride:]
	return keyStat{name: s.names[k], requests: w[wRequests], cost: w[wCost], first: w[wFirst],
		last: w[wLast], peakSec: w[wPeakSec], peakMin: w[wPeakMin]}
}

// outcome returns key k's outcome under run i.
func (s *simulator) outcome(k int32, i int) keyOutcome {
	w := s.slab[int(k)*s.stride+s.outWords+s.outWidth*i:]
	o := keyOutcome{refused: w[0], firstRef: w[1]}
	if s.outWidth > 2 {
		o.need = w[2]
	}
	return o
}

// decide applies slot sl to key k (whose record is rec) at now with cost:
// the one place where an algorithm runs, and it is always package limit's
// own code.
// It returns whether the request is allowed and the capacity in use after
// it (Limit − Remaining), all that the simulation reads of a decision, so
// that the decision itself stays in this frame. A slot sharing its column
// with another (see slot) decides once per request: the second asks the
// memo.
func (s *simulator) decide(sl *slot, k int32, rec []int64, now, cost int64) (allowed bool, used int64) {
	shared := s.sharedSlot[sl.memo]
	if shared && s.memoAt[sl.memo] == s.events {
		m := &s.memo[sl.memo]
		return m.allowed, m.used
	}
	var d limit.Decision
	if sl.stateful != nil {
		w := rec[statWords+3*sl.idx : statWords+3*sl.idx+3]
		st := limit.State{A: w[0], B: w[1], Idle: w[2]}
		switch sl.kind {
		case kindTokenBucket:
			st, d = sl.tb.Decide(st, now, cost)
		case kindLeakyBucket:
			st, d = sl.lb.Decide(st, now, cost)
		case kindFixedWindow:
			st, d = sl.fw.Decide(st, now, cost)
		case kindSlidingWindow:
			st, d = sl.sw.Decide(st, now, cost)
		default:
			st, d = sl.stateful.Decide(st, now, cost)
		}
		w[0], w[1], w[2] = st.A, st.B, st.Idle
	} else if l := &s.logs[int(k)*s.nLogged+sl.idx]; sl.kind == kindSlidingLog {
		// Admit: the simulation reads no RetryAfter, whose walk of the
		// log DecideLog makes on every refusal.
		allowed, used := sl.sl.Admit(l, now, cost)
		if shared {
			s.memoAt[sl.memo], s.memo[sl.memo] = s.events, memoEntry{allowed, used}
		}
		return allowed, used
	} else {
		d = sl.logged.DecideLog(l, now, cost)
	}
	if shared {
		s.memoAt[sl.memo], s.memo[sl.memo] = s.events, memoEntry{d.Allowed, d.Limit - d.Remaining}
	}
	return d.Allowed, d.Limit - d.Remaining
}

// memoEntry is what decide returns, kept for a shared slot.
type memoEntry struct {
	allowed bool
	used    int64
}

// policy returns the slot's algorithm.
func (sl *slot) policy() limit.Policy {
	if sl.stateful != nil {
		return sl.stateful
	}
	return sl.logged
}

// samePolicy reports whether a and b are the same algorithm with the same
// parameters (and so decide alike on the same requests).
func samePolicy(a, b limit.Policy) bool {
	if a == nil || b == nil || reflect.TypeOf(a) != reflect.TypeOf(b) || !reflect.TypeOf(a).Comparable() {
		return false
	}
	return a == b
}

// touch reads a word of each cache line key k's next request will use, so
// that the loads are in flight before apply needs them. The sum goes to
// a field so the compiler keeps the loads.
func (s *simulator) touch(k int32) {
	rec := s.slab[int(k)*s.stride : (int(k)+1)*s.stride]
	sum := rec[len(rec)-1]
	for i := 0; i < len(rec); i += 8 {
		sum += rec[i]
	}
	if s.nLogged > 0 {
		logs := s.logs[int(k)*s.nLogged : (int(k)+1)*s.nLogged]
		sum += logs[0].Sum() + logs[len(logs)-1].Sum()
	}
	if s.nSeam > 0 {
		seams := s.seams[int(k)*s.nSeam : (int(k)+1)*s.nSeam]
		sum += seams[0].sum + seams[len(seams)-1].sum
	}
	s.sink += sum
}

// touchDeep reads what key k's state points to (the seam trackers'
// buffers), its state being loaded already (touch).
func (s *simulator) touchDeep(k int32) {
	sum := int64(0)
	for j := range s.nSeam {
		q := &s.seams[int(k)*s.nSeam+j]
		if q.off < len(q.ents) {
			sum += q.ents[q.off].at + q.ents[len(q.ents)-1].at
		}
	}
	s.sink += sum
}

// apply simulates one request, in time order.
func (s *simulator) apply(e event) {
	s.events++
	s.now = e.t
	if s.tap != nil {
		s.tap(e.t, s.names[e.key], e.cost)
	}
	rec := s.slab[int(e.key)*s.stride : (int(e.key)+1)*s.stride]
	if s.maxKeys > 0 {
		rec[wPending]--
	}
	if rec[wRequests] == 0 {
		rec[wFirst] = e.t
	}
	rec[wRequests]++
	// Costs are at most maxCost, but a key's sums may still run long:
	// they saturate rather than wrap.
	rec[wCost] = addSat(rec[wCost], e.cost)
	rec[wLast] = e.t
	if sec := e.t / nsSecond; sec != rec[wSec] {
		rec[wSec], rec[wSecN] = sec, 0
		if m := sec / 60; m != rec[wMin] {
			rec[wMin], rec[wMinN] = m, 0
		}
	}
	rec[wSecN] = addSat(rec[wSecN], e.cost)
	rec[wPeakSec] = max(rec[wPeakSec], rec[wSecN])
	rec[wMinN] = addSat(rec[wMinN], e.cost)
	rec[wPeakMin] = max(rec[wPeakMin], rec[wMinN])

	b := s.series.request(e.t)
	var track *series
	tb := -1
	if s.tracks != nil {
		if track = s.tracks[e.key]; track != nil {
			tb = track.request(e.t)
		}
	}
	out := rec[s.outWords:]
	for i, r := range s.runs {
		r.requests++
		var allowed bool
		if r.engine != nil {
			allowed = e.req == nil || r.engine.decide(e.req, e.t)
		} else {
			allowed, _ = s.decide(&r.main, e.key, rec, e.t, e.cost)
		}
		s.series.outcome(b, i, allowed)
		if tb >= 0 {
			track.outcome(tb, i, allowed)
		}
		o := out[s.outWidth*i : s.outWidth*(i+1)] // refused, first refusal, need
		if allowed {
			if r.seamIdx >= 0 && e.cost > 0 {
				q := &s.seams[int(e.key)*s.nSeam+r.seamIdx]
				if n, from := q.add(e.t, e.cost, r.seamWindow); n > r.seamMax {
					r.seamMax, r.seamKey, r.seamFrom, r.seamTo = n, s.names[e.key], from, e.t
				}
			}
		} else {
			r.refused++
			if o[0] == 0 {
				o[1] = e.t
			}
			o[0]++
		}
		if r.shadow != nil {
			exact, _ := s.decide(r.shadow, e.key, rec, e.t, e.cost)
			r.compared++
			if exact != allowed {
				r.differ++
				if allowed {
					r.falseAllow++
				} else {
					r.falseRefuse++
				}
			}
		}
		if r.unb != nil {
			_, used := s.decide(r.unb, e.key, rec, e.t, e.cost)
			o[2] = max(o[2], used-r.needAdjust)
		}
	}
	if s.events-s.sweepN >= sweepEvery {
		s.sweep()
	}
}

// sweep frees the buffers of sliding logs and seam trackers that have gone
// idle, so that memory follows the live keys. Dropping an idle log changes
// no later decision (see limit.State).
func (s *simulator) sweep() {
	s.sweepN = s.events
	if s.nLogged == 0 && s.nSeam == 0 {
		return
	}
	for _, r := range s.runs {
		for _, sl := range []*slot{&r.main, r.shadow, r.unb} {
			if sl == nil || sl.logged == nil {
				continue
			}
			for k := range s.names {
				if s.names[k] == "" {
					continue
				}
				l := &s.logs[k*s.nLogged+sl.idx]
				if l.Bytes() > 0 && l.IdleAt() <= s.now {
					*l = limit.Log{}
				}
			}
		}
		if r.seamIdx >= 0 {
			for k := range s.names {
				s.seams[k*s.nSeam+r.seamIdx].release(s.now, r.seamWindow)
			}
		}
	}
}
