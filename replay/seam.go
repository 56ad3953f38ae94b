package replay

// seamQueue holds the admitted requests of one key under one fixed window
// policy that are still within one window length of the newest, to find
// the largest cost a fixed window admits in any window-length span: the
// seam burst, up to twice the limit, where the end of one window meets the
// start of the next. It counts; it does not decide.
type seamQueue struct {
	at, cost []int64
	off      int
	sum      int64
}

// add records an admitted request and returns the cost admitted in
// (t−window, t] and the time of the oldest request in that span.
func (q *seamQueue) add(t, cost, window int64) (int64, int64) {
	for q.off < len(q.at) && q.at[q.off] <= t-window {
		q.sum -= q.cost[q.off]
		q.off++
	}
	if q.off == len(q.at) {
		q.at, q.cost, q.off = q.at[:0], q.cost[:0], 0
	} else if q.off > 0 && len(q.at) == cap(q.at) && q.off >= len(q.at)-q.off {
		n := copy(q.at, q.at[q.off:])
		copy(q.cost, q.cost[q.off:])
		q.at, q.cost, q.off = q.at[:n], q.cost[:n], 0
	}
	q.at = append(q.at, t)
	q.cost = append(q.cost, cost)
	q.sum += cost
	return q.sum, q.at[q.off]
}

// release frees the buffers once the newest entry has left the window.
func (q *seamQueue) release(now, window int64) {
	if cap(q.at) > 0 && (len(q.at) == q.off || q.at[len(q.at)-1] <= now-window) {
		*q = seamQueue{}
	}
}
