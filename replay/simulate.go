package replay

import (
	"math"
	"slices"

	"github.com/tollgate-dev/tollgate/limit"
)

// slot is one simulated policy instance with its own per-key state: a
// user's policy, the exact sliding log shadowing a sliding window counter,
// or an unbounded copy measuring the capacity each key needed.
type slot struct {
	stateful limit.Stateful
	logged   limit.Logged
	idx      int   // index into the simulator's stateful or logged columns
	window   int64 // for a logged slot: its window, to free idle logs
}

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

	requests, refused, refusedCost int64

	// Sliding window counter versus exact log.
	compared, differ, falseAllow, falseRefuse int64

	// The worst seam burst: most cost a fixed window admitted within any
	// span of one window length.
	seamMax          int64
	seamKey          int32
	seamFrom, seamTo int64
}

// keyStat is the fixed-size summary every distinct key keeps.
type keyStat struct {
	name           string
	requests, cost int64
	first, last    int64
	sec, min       int64 // current second and minute index
	secN, minN     int64
	peakSec        int64
	peakMin        int64
	track          *series // per-key timeline, for tracked keys only
}

// keyOutcome is one key's fate under one run.
type keyOutcome struct {
	refused  int64 // refusals
	firstRef int64 // first refusal, Unix ns (0: none)
	need     int64 // capacity needed never to refuse (with suggestions)
}

// grow extends s by n zero elements without a temporary slice.
func grow[T any](s []T, n int) []T {
	s = slices.Grow(s, n)
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

	index map[string]int32
	keys  []keyStat
	// Columns, key-major: keys[k]'s entries are at k*n + i.
	states   []limit.State
	logs     []limit.Log
	seams    []seamQueue
	outcomes []keyOutcome // per key per run

	series *series
	track  map[string]bool

	events int64
	sweepN int64
	now    int64
}

// sweepEvery is how many events pass between sweeps that free the memory
// of idle sliding logs and seam trackers.
const sweepEvery = 1 << 18

func newSimulator(policies []Policy, engine *engineRun, engineName string, suggest bool, track []string) *simulator {
	s := &simulator{index: make(map[string]int32), suggest: suggest}
	addSlot := func(p limit.Policy) *slot {
		sl := &slot{}
		switch q := p.(type) {
		case limit.Stateful:
			sl.stateful, sl.idx = q, s.nStateful
			s.nStateful++
		case limit.Logged:
			sl.logged, sl.idx = q, s.nLogged
			sl.window = int64(q.Quota().Window)
			s.nLogged++
		}
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
	s.series = newSeries(len(s.runs))
	if len(track) > 0 {
		s.track = make(map[string]bool, len(track))
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
func (s *simulator) intern(key []byte) int32 {
	if id, ok := s.index[string(key)]; ok {
		return id
	}
	id := int32(len(s.keys))
	name := string(key)
	s.index[name] = id
	ks := keyStat{name: name, sec: -1, min: -1}
	if s.track[name] {
		ks.track = newSeries(len(s.runs))
	}
	s.keys = append(s.keys, ks)
	s.states = grow(s.states, s.nStateful)
	s.logs = grow(s.logs, s.nLogged)
	s.seams = grow(s.seams, s.nSeam)
	s.outcomes = grow(s.outcomes, len(s.runs))
	return id
}

// decide applies slot sl to key k at now with cost: the one place where an
// algorithm runs, and it is always package limit's own code.
func (s *simulator) decide(sl *slot, k int32, now, cost int64) limit.Decision {
	if sl.stateful != nil {
		st := &s.states[int(k)*s.nStateful+sl.idx]
		var d limit.Decision
		*st, d = sl.stateful.Decide(*st, now, cost)
		return d
	}
	return sl.logged.DecideLog(&s.logs[int(k)*s.nLogged+sl.idx], now, cost)
}

// apply simulates one request, in time order.
func (s *simulator) apply(e event) {
	s.events++
	s.now = e.t
	ks := &s.keys[e.key]
	if ks.requests == 0 {
		ks.first = e.t
	}
	ks.requests++
	ks.cost += e.cost
	ks.last = e.t
	if sec := e.t / nsSecond; sec != ks.sec {
		ks.sec, ks.secN = sec, 0
	}
	ks.secN += e.cost
	ks.peakSec = max(ks.peakSec, ks.secN)
	if m := e.t / nsMinute; m != ks.min {
		ks.min, ks.minN = m, 0
	}
	ks.minN += e.cost
	ks.peakMin = max(ks.peakMin, ks.minN)

	b := s.series.request(e.t)
	tb := -1
	if ks.track != nil {
		tb = ks.track.request(e.t)
	}
	base := int(e.key) * len(s.runs)
	for i, r := range s.runs {
		r.requests++
		var allowed bool
		if r.engine != nil {
			allowed = e.req == nil || r.engine.decide(e.req, e.t)
		} else {
			allowed = s.decide(&r.main, e.key, e.t, e.cost).Allowed
		}
		s.series.outcome(b, i, allowed)
		if tb >= 0 {
			ks.track.outcome(tb, i, allowed)
		}
		if allowed {
			if r.seamIdx >= 0 && e.cost > 0 {
				q := &s.seams[int(e.key)*s.nSeam+r.seamIdx]
				if n, from := q.add(e.t, e.cost, r.seamWindow); n > r.seamMax {
					r.seamMax, r.seamKey, r.seamFrom, r.seamTo = n, e.key, from, e.t
				}
			}
		} else {
			r.refused++
			r.refusedCost += e.cost
			o := &s.outcomes[base+i]
			if o.refused == 0 {
				o.firstRef = e.t
			}
			o.refused++
		}
		if r.shadow != nil {
			exact := s.decide(r.shadow, e.key, e.t, e.cost)
			r.compared++
			if exact.Allowed != allowed {
				r.differ++
				if allowed {
					r.falseAllow++
				} else {
					r.falseRefuse++
				}
			}
		}
		if r.unb != nil {
			u := s.decide(r.unb, e.key, e.t, e.cost)
			if n := u.Limit - u.Remaining - r.needAdjust; n > s.outcomes[base+i].need {
				s.outcomes[base+i].need = n
			}
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
			for k := range s.keys {
				l := &s.logs[k*s.nLogged+sl.idx]
				if l.Bytes() > 0 && l.IdleAt() <= s.now {
					*l = limit.Log{}
				}
			}
		}
		if r.seamIdx >= 0 {
			for k := range s.keys {
				s.seams[k*s.nSeam+r.seamIdx].release(s.now, r.seamWindow)
			}
		}
	}
}
