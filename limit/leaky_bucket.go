package limit

import (
	"fmt"
	"time"
)

// LeakMode says what a LeakyBucket does with a request that fits the burst
// but arrives early.
type LeakMode uint8

// The leaky bucket modes. The zero mode is Shape, nginx's default.
const (
	// Shape admits early requests after a delay, so the origin sees them
	// at Rate (nginx limit_req without nodelay). Delay=N lets the first N
	// excess requests through undelayed (nginx delay=N).
	Shape LeakMode = iota
	// Police admits early requests at once while they fit the burst and
	// refuses the rest (nginx limit_req ... nodelay).
	Police
)

// String returns "shape" or "police".
func (m LeakMode) String() string {
	if m == Police {
		return "police"
	}
	return "shape"
}

// LeakyBucket is nginx limit_req's algorithm: each key has an excess level
// that drains at Rate; a request adds its cost to the excess and is refused
// when the excess would exceed Burst. An idle key admits 1+Burst unit
// requests at once (the first one adds no excess, as in nginx).
//
// nginx counts in thousandths of a request and milliseconds; this
// implementation counts the excess in nanoseconds of drain, so it is exact
// where nginx truncates (nginx's 1r/m is 0.96 requests a minute).
type LeakyBucket struct {
	Rate Rate
	// Burst is the excess allowed above the request being served, in units
	// of cost (nginx burst=N). Zero admits one request per interval.
	Burst int64
	// Mode is Shape (delay excess requests) or Police (never delay).
	Mode LeakMode
	// Delay is, in Shape mode, how many excess units pass undelayed (nginx
	// delay=N); it must not exceed Burst. Ignored in Police mode, which is
	// nginx's nodelay.
	Delay int64
}

// Algorithm returns AlgLeakyBucket.
func (p LeakyBucket) Algorithm() Algorithm { return AlgLeakyBucket }

// Validate reports an invalid rate, a negative burst or delay, or a delay
// above the burst.
func (p LeakyBucket) Validate() error {
	if err := p.Rate.Validate(); err != nil {
		return fmt.Errorf("%w: leaky_bucket: %w", ErrInvalidPolicy, err)
	}
	switch {
	case p.Burst < 0:
		return fmt.Errorf("%w: leaky_bucket: burst %d must not be negative", ErrInvalidPolicy, p.Burst)
	case p.Delay < 0:
		return fmt.Errorf("%w: leaky_bucket: delay %d must not be negative", ErrInvalidPolicy, p.Delay)
	case p.Delay > p.Burst:
		return fmt.Errorf("%w: leaky_bucket: delay %d exceeds burst %d", ErrInvalidPolicy, p.Delay, p.Burst)
	case p.Mode > Police:
		return fmt.Errorf("%w: leaky_bucket: unknown mode %d", ErrInvalidPolicy, p.Mode)
	}
	return validateSpan("leaky_bucket", p.Rate.Interval(), addSat(p.Burst, 1))
}

// Quota is Burst+1 units per the time they take to drain.
func (p LeakyBucket) Quota() Quota {
	n := addSat(p.Burst, 1)
	return Quota{Limit: n, Window: time.Duration(mulSat(p.Rate.Interval(), n))}
}

// String returns e.g. "leaky_bucket(rate=10/s, burst=5, mode=shape, delay=3)".
func (p LeakyBucket) String() string {
	s := fmt.Sprintf("leaky_bucket(rate=%v, burst=%d, mode=%v", p.Rate, p.Burst, p.Mode)
	if p.Mode == Shape && p.Delay > 0 {
		s += fmt.Sprintf(", delay=%d", p.Delay)
	}
	return s + ")"
}

// Decide leaks and charges. State.A is the excess in ns of drain after the
// last admitted request, State.B that request's time, and State.Idle the
// instant the excess has drained one interval below zero, from when the key
// behaves as absent (a new key's first request adds no excess).
func (p LeakyBucket) Decide(st State, now, cost int64) (State, Decision) {
	t := p.Rate.Interval()
	// level is the excess now; an absent or drained key sits at −t.
	level := -t
	if st.Idle > 0 {
		level = max(st.A-max(now-st.B, 0), -t)
	}
	capacity := mulSat(p.Burst, t)
	excess := max(addSat(level, mulSat(cost, t)), 0)
	d := Decision{Limit: addSat(p.Burst, 1)}
	if excess > capacity {
		p.remaining(&d, level, capacity, t)
		if level > -t {
			d.IdleAt = addSat(now, level+t)
			d.ResetAfter = time.Duration(level + t)
		}
		if cost > addSat(p.Burst, 1) {
			d.RetryAfter = Never
		} else {
			d.RetryAfter = time.Duration(max(excess-capacity, 1))
		}
		return st, d
	}
	d.Allowed = true
	if cost == 0 {
		p.remaining(&d, level, capacity, t)
		if level > -t {
			d.IdleAt = addSat(now, level+t)
			d.ResetAfter = time.Duration(level + t)
		}
		return st, d
	}
	p.remaining(&d, excess, capacity, t)
	d.IdleAt = addSat(now, excess+t)
	d.ResetAfter = time.Duration(excess + t)
	if p.Mode == Shape {
		if free := mulSat(p.Delay, t); excess > free {
			d.Delay = time.Duration(excess - free)
		}
	}
	return State{A: excess, B: now, Idle: d.IdleAt}, d
}

// remaining fills Remaining, how many more unit requests fit now above
// the level (which is −t for a drained key, so that one admits Burst+1),
// and, when none does, NextUnitAfter: the time the level takes to drain to
// capacity−t.
func (p LeakyBucket) remaining(d *Decision, level, capacity, t int64) {
	d.Remaining = max(0, (capacity-level)/t)
	if d.Remaining == 0 {
		d.NextUnitAfter = time.Duration(level - (capacity - t))
	}
}
