package redis

import (
	"sync/atomic"
	"time"
)

// breaker is a circuit breaker: closed while calls succeed; open after
// threshold consecutive failures, during which calls are not attempted at
// all. After each cooldown one probe (a PING sent in the background by the
// store, not a caller's request) tests Redis: its success closes the
// breaker, its failure keeps it open for another cooldown. Times are
// monotonic ns from the breaker's creation.
type breaker struct {
	threshold int64
	cooldown  int64
	base      time.Time

	failures  atomic.Int64
	openUntil atomic.Int64 // 0: closed; else the earliest next probe
	probing   atomic.Bool
	trips     atomic.Uint64
	// onChange, when set, is called once per change of state: true when
	// the breaker opens, false when a probe closes it.
	onChange func(open bool)
}

func newBreaker(threshold int, cooldown time.Duration) *breaker {
	return &breaker{threshold: int64(threshold), cooldown: int64(cooldown), base: time.Now()}
}

func (b *breaker) now() int64 { return int64(time.Since(b.base)) + 1 }

// closed reports whether calls may be attempted.
func (b *breaker) closed() bool { return b.openUntil.Load() == 0 }

// probeDue reports, to one caller at a time, that the breaker is open and
// its cooldown has passed: that caller starts the probe and reports it with
// probed.
func (b *breaker) probeDue() bool {
	until := b.openUntil.Load()
	return until != 0 && b.now() >= until && b.probing.CompareAndSwap(false, true)
}

// probed records a probe's outcome.
func (b *breaker) probed(ok bool) {
	if ok {
		b.failures.Store(0)
		if b.openUntil.Swap(0) != 0 && b.onChange != nil {
			b.onChange(false)
		}
	} else {
		b.openUntil.Store(b.now() + b.cooldown)
	}
	b.probing.Store(false)
}

// done records the outcome of an attempted call.
func (b *breaker) done(ok bool) {
	if ok {
		if b.failures.Load() != 0 {
			b.failures.Store(0)
		}
		return
	}
	if b.failures.Add(1) >= b.threshold {
		if b.openUntil.CompareAndSwap(0, b.now()+b.cooldown) {
			b.trips.Add(1)
			if b.onChange != nil {
				b.onChange(true)
			}
		}
	}
}

// open reports whether the breaker is open.
func (b *breaker) open() bool { return !b.closed() }
