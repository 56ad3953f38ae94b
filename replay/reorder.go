package replay

import "math"

// event is one request waiting in the reordering window: its time, the
// interned key, its cost, and its position in the input (so that equal
// times keep input order).
type event struct {
	t    int64
	seq  int64
	key  int32
	cost int64
	req  *engineRequest // the request itself, only when simulating Rules
}

// reorderer puts events back into time order within a bounded window: an
// event is released once an event at least window later has been read,
// or, when more than maxQueued events are waiting, as soon as it is the
// earliest of them (released early, counted). An event older than one
// already released is late: it is released at the time of the last
// released event (clamped, counted), never dropped and never allowed to
// move time backwards. Memory is the number of events within one window
// of the newest, at most maxQueued.
//
// Most lines arrive in order, so events no older than the newest queued
// one go to a FIFO (already sorted, O(1)), and only the stragglers to a
// heap; release takes the earlier of the two heads.
type reorderer struct {
	window    int64
	maxQueued int     // the most events held; at least 1
	fifo      []event // sorted by (t, seq); fifo[head:] are live
	head      int
	h         []event // binary min-heap of the out-of-order events
	maxSeen   int64
	released  int64 // time of the last released event
	started   bool
	late      int64 // events that arrived after their time was released
	lateMax   int64 // the most a late event's time was behind the newest time read before it, ns
	shiftMax  int64 // the most a late event was moved forward (to the release time), ns
	early     int64 // events released before their window had passed, the queue being full
	peak      int   // the most events queued at once
	seq       int64
	sink      *simulator // receives the released events
	// touched and deep count the events from the FIFO's head whose state
	// has been loaded (see prefetch).
	touched, deep int
}

// push adds an event and releases every event now outside the window, in
// order, to the simulator.
func (r *reorderer) push(t int64, key int32, cost int64, req *engineRequest) {
	if r.seq == 0 {
		r.maxSeen = t
	}
	if r.started && t < r.released {
		r.late++
		r.lateMax = max(r.lateMax, diffSat(t, r.maxSeen))
		r.shiftMax = max(r.shiftMax, diffSat(t, r.released))
		t = r.released
	}
	r.maxSeen = max(r.maxSeen, t)
	r.seq++
	if r.sink.maxKeys > 0 { // only retirement needs the count, and it costs a cache miss
		r.sink.slab[int(key)*r.sink.stride+wPending]++
	}
	e := event{t: t, seq: r.seq, key: key, cost: cost, req: req}
	if r.window <= 0 {
		r.started, r.released = true, t
		r.sink.apply(e)
		return
	}
	if r.head == len(r.fifo) || t >= r.fifo[len(r.fifo)-1].t {
		if r.head > 0 && r.head == len(r.fifo) {
			r.fifo, r.head = r.fifo[:0], 0
		} else if r.head > 4096 && (r.head*2 >= len(r.fifo) || len(r.fifo) == cap(r.fifo) && r.head*4 >= len(r.fifo)) {
			// Reuse the released front rather than growing: the FIFO's
			// capacity stays within about 1.5 times what it holds.
			n := copy(r.fifo, r.fifo[r.head:])
			r.fifo, r.head = r.fifo[:n], 0
		}
		r.fifo = append(r.fifo, e)
	} else {
		r.h = append(r.h, e)
		r.up(len(r.h) - 1)
	}
	limit := subSat(r.maxSeen, r.window)
	queued := len(r.fifo) - r.head + len(r.h)
	r.peak = max(r.peak, queued)
	for {
		e, ok := r.peek()
		if !ok {
			return
		}
		if e.t > limit {
			if queued <= r.maxQueued {
				return
			}
			r.early++
		}
		queued--
		r.prefetch()
		r.sink.apply(r.pop())
	}
}

// flush releases everything left, in order.
func (r *reorderer) flush() {
	for {
		if _, ok := r.peek(); !ok {
			return
		}
		r.sink.apply(r.pop())
	}
}

// peek returns the earliest queued event.
func (r *reorderer) peek() (*event, bool) {
	hasF, hasH := r.head < len(r.fifo), len(r.h) > 0
	switch {
	case hasF && hasH:
		if less(&r.h[0], &r.fifo[r.head]) {
			return &r.h[0], true
		}
		return &r.fifo[r.head], true
	case hasF:
		return &r.fifo[r.head], true
	case hasH:
		return &r.h[0], true
	}
	return nil, false
}

// pop removes and returns the earliest queued event; there must be one.
func (r *reorderer) pop() event {
	var e event
	if len(r.h) > 0 && (r.head == len(r.fifo) || less(&r.h[0], &r.fifo[r.head])) {
		e = r.h[0]
		n := len(r.h) - 1
		r.h[0] = r.h[n]
		r.h = r.h[:n]
		r.down(0)
		if n > 0 {
			// The next straggler out is likely a few requests away: start
			// loading its state (the FIFO's are loaded by prefetch).
			r.sink.touch(r.h[0].key)
		}
	} else {
		e = r.fifo[r.head]
		r.head++
		r.touched, r.deep = max(r.touched-1, 0), max(r.deep-1, 0)
	}
	r.started, r.released = true, e.t
	return e
}

// Requests ahead of the FIFO's head have their state loaded in batches
// (simulator.touch), so that their cache misses overlap each other's
// instead of each stalling its own request: the records of the next
// prefetchBatch requests once fewer than prefetchBatch are loaded ahead,
// and then (touchDeep) what those records point to, once loaded.
const prefetchBatch = 16

// prefetch loads the state of the requests ahead in the FIFO.
func (r *reorderer) prefetch() {
	live := len(r.fifo) - r.head
	if r.touched > live {
		r.touched = live
	}
	if r.deep > r.touched {
		r.deep = r.touched
	}
	if r.deep < prefetchBatch/2 && r.deep < r.touched {
		end := min(r.touched, r.deep+prefetchBatch)
		for _, e := range r.fifo[r.head+r.deep : r.head+end] {
			r.sink.touchDeep(e.key)
		}
		r.deep = end
	}
	if r.touched < 2*prefetchBatch && r.touched < live {
		end := min(live, r.touched+prefetchBatch)
		for _, e := range r.fifo[r.head+r.touched : r.head+end] {
			r.sink.touch(e.key)
		}
		r.touched = end
	}
}

// subSat returns a - b for b >= 0, or the smallest int64 where that
// would overflow: times may be anywhere in the int64 range.
func subSat(a, b int64) int64 {
	if a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}

// diffSat returns t - from for t >= from, or the largest int64 where that
// would overflow.
func diffSat(from, t int64) int64 {
	return int64(min(span(from, t), math.MaxInt64))
}

// addSat returns a + b for a, b >= 0, or the largest int64 where that
// would overflow.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func less(a, b *event) bool {
	return a.t < b.t || (a.t == b.t && a.seq < b.seq)
}

func (r *reorderer) up(i int) {
	h := r.h
	for i > 0 {
		p := (i - 1) / 2
		if !less(&h[i], &h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (r *reorderer) down(i int) {
	h := r.h
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if rr := l + 1; rr < n && less(&h[rr], &h[l]) {
			m = rr
		}
		if !less(&h[m], &h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
