package replay

// event is one request waiting in the reordering window: its time, the
// interned key, its cost, and its position in the input (so that equal
// times keep input order).
type event struct {
	t    int64
	seq  int64
	key  int32
	cost int64
}

// reorderer puts events back into time order within a bounded window: an
// event is released once an event at least window later has been read.
// An event older than one already released is late: it is released at
// the time of the last released event (clamped, counted), never dropped
// and never allowed to move time backwards. Memory is the number of
// events within one window of the newest.
type reorderer struct {
	window   int64
	h        []event
	maxSeen  int64
	released int64 // time of the last released event
	started  bool
	late     int64 // events that arrived after their time was released
	lateMax  int64 // the largest lateness seen, ns
	seq      int64
	sink     *simulator // receives the released events
}

// push adds an event and releases every event now outside the window, in
// order, to the simulator.
func (r *reorderer) push(t int64, key int32, cost int64) {
	if r.started && t < r.released {
		r.late++
		r.lateMax = max(r.lateMax, r.released-t)
		t = r.released
	}
	if len(r.h) == 0 && !r.started {
		r.maxSeen = t
	}
	r.maxSeen = max(r.maxSeen, t)
	r.seq++
	e := event{t: t, seq: r.seq, key: key, cost: cost}
	if r.window <= 0 {
		r.started, r.released = true, t
		r.sink.apply(e)
		return
	}
	r.h = append(r.h, e)
	r.up(len(r.h) - 1)
	limit := r.maxSeen - r.window
	for len(r.h) > 0 && r.h[0].t <= limit {
		r.sink.apply(r.pop())
	}
}

// flush releases everything left, in order.
func (r *reorderer) flush() {
	for len(r.h) > 0 {
		r.sink.apply(r.pop())
	}
}

func (r *reorderer) pop() event {
	e := r.h[0]
	n := len(r.h) - 1
	r.h[0] = r.h[n]
	r.h = r.h[:n]
	r.down(0)
	r.started, r.released = true, e.t
	return e
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
