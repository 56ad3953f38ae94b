package limit

import (
	"fmt"
	"time"
)

// TokenBucket is a token bucket of capacity Burst refilling at Rate,
// implemented as GCRA on one integer (the theoretical arrival time), with
// golang.org/x/time/rate's meaning of burst: an idle key admits Burst units
// at once, and a bucket starts full.
//
// The emission interval is Rate.Period/Rate.Count, truncated to whole
// nanoseconds.
type TokenBucket struct {
	Rate Rate
	// Burst is the capacity. Zero means Rate.Count; negative is invalid.
	Burst int64
}

// Algorithm returns AlgTokenBucket.
func (p TokenBucket) Algorithm() Algorithm { return AlgTokenBucket }

// Validate reports an invalid rate or a negative burst.
func (p TokenBucket) Validate() error {
	if err := p.Rate.Validate(); err != nil {
		return fmt.Errorf("%w: token_bucket: %w", ErrInvalidPolicy, err)
	}
	if p.Burst < 0 {
		return fmt.Errorf("%w: token_bucket: burst %d must not be negative", ErrInvalidPolicy, p.Burst)
	}
	return validateSpan("token_bucket", p.Rate.Interval(), p.burst())
}

func (p TokenBucket) burst() int64 {
	if p.Burst == 0 {
		return p.Rate.Count
	}
	return p.Burst
}

// Quota is Burst units per the time the bucket takes to refill from empty.
func (p TokenBucket) Quota() Quota {
	b := p.burst()
	return Quota{Limit: b, Window: time.Duration(mulSat(p.Rate.Interval(), b))}
}

// String returns e.g. "token_bucket(rate=100/m, burst=20)".
func (p TokenBucket) String() string {
	return fmt.Sprintf("token_bucket(rate=%v, burst=%d)", p.Rate, p.burst())
}

// Decide applies GCRA. State.A and State.Idle both hold the TAT.
func (p TokenBucket) Decide(st State, now, cost int64) (State, Decision) {
	var d Decision
	next := p.DecideInto(&d, st, now, cost)
	return next, d
}

// DecideInto is Decide writing the decision into d, all of it: for a
// store's hot path, where a Decision (a dozen words) returned by value is
// copied at every call it goes up.
func (p TokenBucket) DecideInto(d *Decision, st State, now, cost int64) State {
	t := p.Rate.Interval()
	b := p.burst()
	tau := mulSat(t, b)
	tat := max(st.A, now)
	*d = Decision{Limit: b}
	if cost == 0 {
		d.Allowed = true
		p.report(d, tat, now, t, tau)
		return st
	}
	inc := mulSat(t, cost)
	newTat := addSat(tat, inc)
	allowAt := newTat - tau
	if now < allowAt {
		p.report(d, tat, now, t, tau)
		if cost > b {
			d.RetryAfter = Never
		} else {
			d.RetryAfter = time.Duration(allowAt - now)
		}
		return st
	}
	d.Allowed = true
	p.report(d, newTat, now, t, tau)
	return State{A: newTat, Idle: newTat}
}

// report fills Remaining, NextUnitAfter, ResetAfter and IdleAt for a
// bucket whose TAT is tat (at least now). A TAT beyond now+τ (a bucket
// charged past its burst by a sync) has nothing left.
func (p TokenBucket) report(d *Decision, tat, now, t, tau int64) {
	d.Remaining = max(0, (tau-(tat-now))/t)
	if d.Remaining == 0 {
		// One unit is back when TAT−τ+t is reached.
		d.NextUnitAfter = until(addSat(tat, t-tau), now)
	}
	d.ResetAfter = until(tat, now)
	d.IdleAt = idleAt(tat, now)
}

// idleAt is the decision's IdleAt for a state idle at t: zero if already.
func idleAt(t, now int64) int64 {
	if t <= now {
		return 0
	}
	return t
}
