package limit

import (
	"fmt"
	"time"
)

// MaxLogLimit is the largest Limit a SlidingLog accepts. The log keeps one
// entry (16 bytes) per admitted request still inside the window, so a key
// costs at most MaxLogLimit×16 bytes = 160 KiB; that bound is what makes the
// exact log safe to expose to clients who choose their own keys.
const MaxLogLimit = 10_000

// SlidingLog is the exact sliding window: it remembers when each admitted
// request arrived and admits a request of cost n when the cost admitted in
// the last Window plus n is at most Limit. Memory is O(Limit) per key (see
// MaxLogLimit); prefer SlidingWindow for large limits.
type SlidingLog struct {
	Limit  int64
	Window time.Duration
}

// Algorithm returns AlgSlidingLog.
func (p SlidingLog) Algorithm() Algorithm { return AlgSlidingLog }

// Validate reports a non-positive limit or window, or a limit above
// MaxLogLimit.
func (p SlidingLog) Validate() error {
	if err := validateWindow("sliding_log", p.Limit, p.Window); err != nil {
		return err
	}
	if p.Limit > MaxLogLimit {
		return fmt.Errorf("%w: sliding_log: limit %d exceeds %d (memory is O(limit) per key; use sliding_window)", ErrInvalidPolicy, p.Limit, MaxLogLimit)
	}
	return nil
}

// Quota is Limit per Window.
func (p SlidingLog) Quota() Quota { return Quota{Limit: p.Limit, Window: p.Window} }

// String returns e.g. "sliding_log(limit=100, window=1m)".
func (p SlidingLog) String() string {
	return fmt.Sprintf("sliding_log(limit=%d, window=%s)", p.Limit, formatWindow(p.Window))
}

// DecideLog applies the exact sliding window to l.
func (p SlidingLog) DecideLog(l *Log, now, cost int64) Decision {
	w := int64(p.Window)
	now, allowed := p.admit(l, now, cost)
	d := Decision{Limit: p.Limit, Allowed: allowed}
	if !d.Allowed {
		if cost > p.Limit {
			d.RetryAfter = Never
		} else {
			d.RetryAfter = l.waitFor(l.sum+cost-p.Limit, now, w)
		}
	}
	d.Remaining = max(0, p.Limit-l.sum)
	if d.Remaining == 0 {
		d.NextUnitAfter = l.waitFor(l.sum+1-p.Limit, now, w)
	}
	if l.Len() > 0 {
		d.IdleAt = l.idle
		d.ResetAfter = until(d.IdleAt, now)
	}
	return d
}

// Admit is DecideLog without the times: it leaves l exactly as DecideLog
// would and returns the decision's Allowed and its Limit − Remaining (the
// cost admitted in the window, at most Limit). DecideLog also walks the log
// to compute RetryAfter and NextUnitAfter when it refuses or is full; a
// caller that reads neither (a simulation counting refusals) saves that.
func (p SlidingLog) Admit(l *Log, now, cost int64) (allowed bool, used int64) {
	_, allowed = p.admit(l, now, cost)
	return allowed, min(p.Limit, l.sum)
}

// admit forgets what left the window, charges cost if it fits and updates
// l.idle; it returns now clamped to the newest entry and whether it
// admitted.
func (p SlidingLog) admit(l *Log, now, cost int64) (int64, bool) {
	w := int64(p.Window)
	if last := l.newest(); last > now { // the clock went back: clamp
		now = last
	}
	l.forget(now - w)
	allowed := cost <= p.Limit-l.sum
	if allowed && cost > 0 {
		l.push(now, cost)
	}
	l.idle = 0
	if l.Len() > 0 {
		l.idle = addSat(l.newest(), w)
	}
	return now, allowed
}

// waitFor is the time until need units of cost have left the window
// (need > 0): the oldest entries leave first, each w after it arrived.
func (l *Log) waitFor(need, now, w int64) time.Duration {
	for i := l.off; i < len(l.ents); i++ {
		need -= l.ents[i].cost
		if need <= 0 {
			return time.Duration(max(addSat(l.ents[i].at, w)-now, 1))
		}
	}
	return 0
}

// Log is a sliding log's per-key state: the admitted requests still inside
// the window, oldest first. The zero Log is empty and ready to use. A Log
// is not safe for concurrent use; stores guard it.
type Log struct {
	ents []logEntry
	off  int   // ents[off:] are live
	sum  int64 // total cost of the live entries
	idle int64 // newest entry + window, as of the last decision
}

type logEntry struct{ at, cost int64 }

// Len returns the number of admitted requests the log remembers.
func (l *Log) Len() int { return len(l.ents) - l.off }

// Sum returns the total cost the log remembers.
func (l *Log) Sum() int64 { return l.sum }

// IdleAt returns the instant from which the log is equivalent to an empty
// one, as of the last decision made on it: zero if it is empty.
func (l *Log) IdleAt() int64 {
	if l.Len() == 0 {
		return 0
	}
	return l.idle
}

// Bytes returns the memory the log's buffer holds, for store accounting.
func (l *Log) Bytes() int { return cap(l.ents) * 16 }

// Rollback undoes the charge of the last DecideLog call, which must have
// allowed a positive cost: stores use it when another policy of the same
// request refused, so that nothing is charged.
func (l *Log) Rollback() {
	if l.Len() == 0 {
		return
	}
	last := len(l.ents) - 1
	l.sum -= l.ents[last].cost
	l.ents = l.ents[:last]
	if l.off == len(l.ents) {
		l.ents, l.off = l.ents[:0], 0
	}
}

func (l *Log) newest() int64 {
	if l.Len() == 0 {
		return 0
	}
	return l.ents[len(l.ents)-1].at
}

// forget drops the entries at or before cutoff.
func (l *Log) forget(cutoff int64) {
	for l.off < len(l.ents) && l.ents[l.off].at <= cutoff {
		l.sum -= l.ents[l.off].cost
		l.off++
	}
	if l.off == len(l.ents) {
		l.ents, l.off = l.ents[:0], 0
	}
}

func (l *Log) push(at, cost int64) {
	if l.off > 0 && len(l.ents) == cap(l.ents) && l.off >= l.Len() {
		// Slide the live entries down instead of growing; the copy costs
		// no more than the entries already forgotten, so it amortises.
		n := copy(l.ents, l.ents[l.off:])
		l.ents, l.off = l.ents[:n], 0
	}
	l.ents = append(l.ents, logEntry{at, cost})
	l.sum += cost
}
