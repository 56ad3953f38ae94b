package redis

import (
	"sync/atomic"
	"time"
)

// breaker is a circuit breaker: closed while calls succeed; open for a
// cooldown after threshold consecutive failures, during which calls are
// not attempted; then half-open, letting one probe through, which closes
// it on success and reopens it on failure. Times are monotonic ns from
// the breaker's creation.
type breaker struct {
	threshold int64
	cooldown  int64
	base      time.Time

	failures  atomic.Int64
	openUntil atomic.Int64 // 0: closed
	probing   atomic.Bool
	trips     atomic.Uint64
}

func newBreaker(threshold int, cooldown time.Duration) *breaker {
	return &breaker{threshold: int64(threshold), cooldown: int64(cooldown), base: time.Now()}
}

func (b *breaker) now() int64 { return int64(time.Since(b.base)) + 1 }

// allow reports whether a call may be attempted, and whether it is the
// half-open probe (which must report its outcome with done).
func (b *breaker) allow() (ok, probe bool) {
	until := b.openUntil.Load()
	if until == 0 {
		return true, false
	}
	if b.now() < until {
		return false, false
	}
	if b.probing.CompareAndSwap(false, true) {
		return true, true
	}
	return false, false
}

// done records the outcome of an allowed call.
func (b *breaker) done(ok, probe bool) {
	if probe {
		defer b.probing.Store(false)
	}
	if ok {
		if b.failures.Load() != 0 {
			b.failures.Store(0)
		}
		if b.openUntil.Load() != 0 {
			b.openUntil.Store(0)
		}
		return
	}
	n := b.failures.Add(1)
	if probe || n >= b.threshold {
		if b.openUntil.Swap(b.now()+b.cooldown) == 0 {
			b.trips.Add(1)
		}
	}
}

// open reports whether the breaker is open or half-open.
func (b *breaker) open() bool { return b.openUntil.Load() != 0 }
