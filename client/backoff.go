package client

import (
	"fmt"
	"time"
)

// Strategy is how a backoff delay is jittered, following Marc Brooker's
// "Exponential Backoff and Jitter" (AWS Architecture Blog, 2015). In the
// formulas, n counts retries from 0, base is Config.BaseDelay and cap is
// Config.MaxDelay.
type Strategy uint8

// The strategies. FullJitter is the zero value and the default; the others
// exist to compare against it.
const (
	// FullJitter waits rand(0, min(cap, base·2^n)): the least total work
	// for the server in the AWS comparison.
	FullJitter Strategy = iota
	// EqualJitter waits v/2 + rand(0, v/2), v = min(cap, base·2^n).
	EqualJitter
	// DecorrelatedJitter waits min(cap, rand(base, 3·prev)), prev starting
	// at base and being the previous wait.
	DecorrelatedJitter
	// NoJitter waits min(cap, base·2^n): plain exponential backoff, which
	// keeps refused clients in lock-step.
	NoJitter
)

var strategyNames = [...]string{
	FullJitter:         "full_jitter",
	EqualJitter:        "equal_jitter",
	DecorrelatedJitter: "decorrelated_jitter",
	NoJitter:           "no_jitter",
}

// String returns the strategy's name, e.g. "full_jitter".
func (s Strategy) String() string {
	if int(s) < len(strategyNames) {
		return strategyNames[s]
	}
	return fmt.Sprintf("Strategy(%d)", uint8(s))
}

// ceiling returns min(ceil, base·2^n) without overflowing.
func ceiling(base, ceil time.Duration, n int) time.Duration {
	if base <= 0 {
		return 0
	}
	if n < 0 {
		n = 0
	}
	if n >= 62 || base > ceil>>n {
		return ceil
	}
	return base << n
}

// backoff returns the wait before retry n (from 0) under strategy s, given
// the previous backoff wait prev (zero before the first). rnd(k) is uniform
// in [0, k).
func backoff(s Strategy, base, ceil time.Duration, n int, prev time.Duration, rnd func(int64) int64) time.Duration {
	switch s {
	case NoJitter:
		return ceiling(base, ceil, n)
	case EqualJitter:
		v := ceiling(base, ceil, n)
		return v/2 + uniform(rnd, v-v/2)
	case DecorrelatedJitter:
		if prev < base {
			prev = base
		}
		hi := ceil
		if prev <= ceil/3 {
			hi = 3 * prev
		}
		if hi <= base {
			return min(ceil, base)
		}
		return min(ceil, base+uniform(rnd, hi-base))
	default: // FullJitter
		return uniform(rnd, ceiling(base, ceil, n))
	}
}

// uniform returns a duration uniform in [0, d), or 0 when d <= 0.
func uniform(rnd func(int64) int64, d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(rnd(int64(d)))
}
