package client

import (
	"testing"
	"time"
)

// rndMax draws the largest value rnd may return; rndMin the smallest.
func rndMax(n int64) int64 { return n - 1 }
func rndMin(int64) int64   { return 0 }

func TestCeiling(t *testing.T) {
	const base, ceil = 100 * time.Millisecond, 10 * time.Second
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{
		{-1, base}, {0, base}, {1, 200 * time.Millisecond}, {2, 400 * time.Millisecond},
		{6, 6400 * time.Millisecond}, {7, ceil}, {62, ceil}, {63, ceil}, {1000, ceil},
	} {
		if got := ceiling(base, ceil, tc.n); got != tc.want {
			t.Errorf("ceiling(n=%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
	// No overflow for a base near the top of the range.
	if got := ceiling(time.Duration(1<<62), time.Duration(1<<63-1), 3); got != time.Duration(1<<63-1) {
		t.Errorf("ceiling overflowed: %v", got)
	}
	if got := ceiling(0, ceil, 3); got != 0 {
		t.Errorf("zero base: %v", got)
	}
}

func TestBackoffStrategies(t *testing.T) {
	const base, ceil = 100 * time.Millisecond, time.Second
	for _, tc := range []struct {
		s        Strategy
		n        int
		prev     time.Duration
		lo, hi   time.Duration // with rndMin, rndMax
		seenName string
	}{
		{FullJitter, 0, 0, 0, base - 1, "full_jitter"},
		{FullJitter, 3, 0, 0, 800*time.Millisecond - 1, "full_jitter"},
		{FullJitter, 10, 0, 0, ceil - 1, "full_jitter"},
		{NoJitter, 0, 0, base, base, "no_jitter"},
		{NoJitter, 2, 0, 400 * time.Millisecond, 400 * time.Millisecond, "no_jitter"},
		{NoJitter, 9, 0, ceil, ceil, "no_jitter"},
		{EqualJitter, 2, 0, 200 * time.Millisecond, 400*time.Millisecond - 1, "equal_jitter"},
		{DecorrelatedJitter, 0, 0, base, 300*time.Millisecond - 1, "decorrelated_jitter"},
		{DecorrelatedJitter, 5, 200 * time.Millisecond, base, 600*time.Millisecond - 1, "decorrelated_jitter"},
		{DecorrelatedJitter, 5, 900 * time.Millisecond, base, ceil - 1, "decorrelated_jitter"},
	} {
		lo := backoff(tc.s, base, ceil, tc.n, tc.prev, rndMin)
		hi := backoff(tc.s, base, ceil, tc.n, tc.prev, rndMax)
		if lo != tc.lo || hi != tc.hi {
			t.Errorf("%v n=%d prev=%v: range [%v, %v], want [%v, %v]", tc.s, tc.n, tc.prev, lo, hi, tc.lo, tc.hi)
		}
		if tc.s.String() != tc.seenName {
			t.Errorf("String() = %q, want %q", tc.s.String(), tc.seenName)
		}
	}
	if s := Strategy(9).String(); s != "Strategy(9)" {
		t.Errorf("unknown strategy String() = %q", s)
	}
}

// TestFullJitterSpreads checks, with the real random source, that full
// jitter draws across the whole interval rather than clustering.
func TestFullJitterSpreads(t *testing.T) {
	c := Config{}.withDefaults()
	const n, draws = 3, 4000
	v := ceiling(c.BaseDelay, c.MaxDelay, n)
	var buckets [4]int
	for range draws {
		d := backoff(FullJitter, c.BaseDelay, c.MaxDelay, n, 0, c.Rand)
		if d < 0 || d >= v {
			t.Fatalf("draw %v outside [0, %v)", d, v)
		}
		buckets[d*4/v]++
	}
	for i, b := range buckets {
		if b < draws/4*8/10 || b > draws/4*12/10 {
			t.Errorf("quarter %d holds %d of %d draws: not uniform", i, b, draws)
		}
	}
}
