package replay

// seamQueue holds the admitted requests of one key under one fixed window
// policy that are still within one window length of the newest, to find
// the largest cost a fixed window admits in any window-length span: the
// seam burst, up to twice the limit, where the end of one window meets the
// start of the next. It counts; it does not decide.
type seamQueue struct {
	ents []seamEntry
	off  int
	sum  int64
}

type seamEntry struct{ at, cost int64 }

// add records an admitted request and returns the cost admitted in
// (t−window, t] and the time of the oldest request in that span.
func (q *seamQueue) add(t, cost, window int64) (int64, int64) {
	cut := subSat(t, window)
	for q.off < len(q.ents) && q.ents[q.off].at <= cut {
		q.sum -= q.ents[q.off].cost
		q.off++
	}
	if q.off == len(q.ents) {
		q.ents, q.off = q.ents[:0], 0
	} else if q.off > 0 && len(q.ents) == cap(q.ents) && q.off >= len(q.ents)-q.off {
		n := copy(q.ents, q.ents[q.off:])
		q.ents, q.off = q.ents[:n], 0
	}
	q.ents = append(q.ents, seamEntry{t, cost})
	q.sum = addSat(q.sum, cost)
	return q.sum, q.ents[q.off].at
}

// release frees the buffer once the newest entry has left the window.
func (q *seamQueue) release(now, window int64) {
	if cap(q.ents) > 0 && (len(q.ents) == q.off || q.ents[len(q.ents)-1].at <= subSat(now, window)) {
		*q = seamQueue{}
	}
}
