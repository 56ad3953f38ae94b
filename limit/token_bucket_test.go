package limit_test

import (
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// TestZeroCostCheckOfOverchargedKeyHasNothingLeft: an eventual sync adds
// admissions made elsewhere unconditionally, so a key's state can hold more
// than its capacity (a token bucket's TAT beyond now+τ, a window's count
// above its limit). A zero-cost check of such a key reports nothing left,
// never a negative Remaining.
func TestZeroCostCheckOfOverchargedKeyHasNothingLeft(t *testing.T) {
	const now = int64(1_000 * time.Second)
	tb := limit.TokenBucket{Rate: limit.Per(10, time.Second), Burst: 20}
	// 50 tokens charged onto a full bucket of 20: TAT = now + 5s, τ = 2s.
	tat := now + int64(5*time.Second)
	fw := limit.FixedWindow{Limit: 20, Window: time.Second}
	sw := limit.SlidingWindow{Limit: 20, Window: time.Second}
	lb := limit.LeakyBucket{Rate: limit.Per(10, time.Second), Burst: 20, Mode: limit.Police}
	idx := now / int64(time.Second)
	for _, c := range []struct {
		p  limit.Stateful
		st limit.State
	}{
		{tb, limit.State{A: tat, Idle: tat}},
		{fw, limit.State{A: idx, B: 50, Idle: (idx + 1) * int64(time.Second)}},
		{sw, limit.State{A: 50, B: 50, Idle: (idx + 2) * int64(time.Second)}},
		{lb, limit.State{A: int64(5 * time.Second), B: now, Idle: now + int64(5*time.Second) + int64(100*time.Millisecond)}},
	} {
		next, d := c.p.Decide(c.st, now, 0)
		if d.Remaining != 0 {
			t.Errorf("%v: zero-cost check of an over-charged key: Remaining %d, want 0", c.p, d.Remaining)
		}
		if next != c.st {
			t.Errorf("%v: a zero-cost check changed the state %+v -> %+v", c.p, c.st, next)
		}
	}
}
