package limit

import (
	"fmt"
	"time"
)

// FixedWindow admits at most Limit units of cost per window, with windows
// aligned to the Unix epoch (a 1m window starts on each minute).
//
// Its known weakness is the seam: up to 2×Limit can pass within one window
// length, Limit at the end of one window and Limit at the start of the
// next. That is the algorithm, documented, not fixed; use SlidingWindow or
// SlidingLog where it matters.
type FixedWindow struct {
	Limit  int64
	Window time.Duration
}

// Algorithm returns AlgFixedWindow.
func (p FixedWindow) Algorithm() Algorithm { return AlgFixedWindow }

// Validate reports a non-positive limit or window.
func (p FixedWindow) Validate() error { return validateWindow("fixed_window", p.Limit, p.Window) }

func validateWindow(name string, limit int64, window time.Duration) error {
	if limit <= 0 {
		return fmt.Errorf("%w: %s: limit %d must be positive", ErrInvalidPolicy, name, limit)
	}
	if window <= 0 {
		return fmt.Errorf("%w: %s: window %v must be positive", ErrInvalidPolicy, name, window)
	}
	if window > MaxSpan {
		return fmt.Errorf("%w: %s: window %v exceeds %v (about 100 years)", ErrInvalidPolicy, name, window, MaxSpan)
	}
	return nil
}

// MaxSpan is the longest window a policy may have, and the longest a
// bucket may take to fill or drain from empty: about 100 years. The
// algorithms compute in Unix nanoseconds, which end in 2262; longer spans
// would saturate that arithmetic and stop limiting.
const MaxSpan = 100 * 365 * 24 * time.Hour

// validateSpan reports a bucket whose capacity, units of interval each,
// spans more than MaxSpan.
func validateSpan(name string, interval, units int64) error {
	if span := mulSat(interval, units); span > int64(MaxSpan) {
		return fmt.Errorf("%w: %s: %d × %v exceeds %v (about 100 years): a lower burst or a faster rate", ErrInvalidPolicy, name, units, time.Duration(interval), MaxSpan)
	}
	return nil
}

// Quota is Limit per Window.
func (p FixedWindow) Quota() Quota { return Quota{Limit: p.Limit, Window: p.Window} }

// String returns e.g. "fixed_window(limit=100, window=1m)".
func (p FixedWindow) String() string {
	return fmt.Sprintf("fixed_window(limit=%d, window=%s)", p.Limit, formatWindow(p.Window))
}

// Decide counts cost in the window containing now. State.A is the window
// index, State.B the count charged in it, State.Idle the window's end.
func (p FixedWindow) Decide(st State, now, cost int64) (State, Decision) {
	w := int64(p.Window)
	idx := max(now, 0) / w
	count := int64(0)
	// A state of this policy ends its window, Idle = (A+1)·window, and
	// counts nothing negative. One that does not (left by another
	// algorithm or window length under the same key, or by no one) is
	// treated as absent, never as a window far in the future.
	if st.Idle > 0 && st.A >= 0 && st.B >= 0 && st.Idle == addSat(mulSat(st.A, w), w) {
		switch {
		case st.A == idx:
			count = st.B
		case st.A > idx: // the clock went back: stay in the later window
			idx, count = st.A, st.B
		}
	}
	end := addSat(mulSat(idx, w), w)
	d := Decision{Limit: p.Limit, ResetAfter: until(end, now)}
	if cost > p.Limit-count {
		d.Remaining = max(0, p.Limit-count)
		if count == 0 {
			d.ResetAfter = 0
		} else {
			d.IdleAt = end
		}
		if cost > p.Limit {
			d.RetryAfter = Never
		} else {
			d.RetryAfter = max(d.ResetAfter, 1)
		}
		if d.Remaining == 0 {
			d.NextUnitAfter = max(d.ResetAfter, 1)
		}
		return st, d
	}
	d.Allowed = true
	count += cost
	d.Remaining = p.Limit - count
	if count == 0 {
		d.ResetAfter = 0
		return st, d
	}
	if d.Remaining == 0 {
		d.NextUnitAfter = max(d.ResetAfter, 1)
	}
	d.IdleAt = end
	return State{A: idx, B: count, Idle: end}, d
}
