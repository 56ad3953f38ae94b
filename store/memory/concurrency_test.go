package memory_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/limit/limittest"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// hammer has 64 goroutines send 20 requests each for key at the clock's
// current instant and returns how many were admitted.
func hammer(t *testing.T, st *memory.Store, reqs []limit.Request) int64 {
	t.Helper()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for range 20 {
				var d limit.Decision
				var err error
				if len(reqs) == 1 {
					d, err = st.Apply(context.Background(), reqs[0].Key, reqs[0].Policy, reqs[0].Cost)
				} else {
					d, err = st.ApplyAll(context.Background(), reqs)
				}
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					admitted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return admitted.Load()
}

// TestExactUnderConcurrency: 64 goroutines hammering one key at frozen
// instants get exactly what the algorithm allows at each instant, no more
// and no fewer. (The sliding counter's estimate is exact here too, since
// the instants are chosen; its general bound is 2× the limit per window,
// see limit.SlidingWindow.)
func TestExactUnderConcurrency(t *testing.T) {
	sec := time.Second
	ms := time.Millisecond
	for _, tc := range []struct {
		policy limit.Policy
		phases []time.Duration
		want   []int64
	}{
		{limit.TokenBucket{Rate: limit.Per(100, sec), Burst: 50}, []time.Duration{0, 100 * ms, 100 * ms, 350 * ms}, []int64{50, 10, 0, 25}},
		{limit.LeakyBucket{Rate: limit.Per(100, sec), Burst: 49, Mode: limit.Police}, []time.Duration{0, 100 * ms, 100 * ms}, []int64{50, 10, 0}},
		{limit.FixedWindow{Limit: 50, Window: sec}, []time.Duration{0, 999 * ms, sec}, []int64{50, 0, 50}},
		{limit.SlidingLog{Limit: 50, Window: sec}, []time.Duration{0, 500 * ms, sec, 1500 * ms}, []int64{50, 0, 50, 0}},
		// Window 1 starts with 50 behind it: full at 1s, half-decayed at 1.5s.
		{limit.SlidingWindow{Limit: 50, Window: sec}, []time.Duration{0, sec, 1500 * ms}, []int64{50, 0, 25}},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			clock := new(limittest.Clock)
			st, err := memory.New(memory.Config{Clock: clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			for i, at := range tc.phases {
				clock.Set(limittest.Base + int64(at))
				if got := hammer(t, st, []limit.Request{{Key: "hot", Policy: tc.policy, Cost: 1}}); got != tc.want[i] {
					t.Errorf("phase %d at %v: admitted %d of 1280; want exactly %d", i, at, got, tc.want[i])
				}
			}
		})
	}
}

// TestApplyAllUnderConcurrency: a batch of two policies is all-or-nothing
// under contention: the bucket (burst 30) caps the batch, and the window
// (limit 50) is charged only for the 30 admitted batches.
func TestApplyAllUnderConcurrency(t *testing.T) {
	clock := new(limittest.Clock)
	clock.Set(limittest.Base)
	st, err := memory.New(memory.Config{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fw := limit.FixedWindow{Limit: 50, Window: time.Minute}
	reqs := []limit.Request{
		{Key: "a", Policy: limit.TokenBucket{Rate: limit.Per(1, time.Second), Burst: 30}, Cost: 1},
		{Key: "b", Policy: fw, Cost: 1},
	}
	if got := hammer(t, st, reqs); got != 30 {
		t.Fatalf("admitted %d batches; want 30", got)
	}
	d, err := st.Apply(context.Background(), "b", fw, 0)
	if err != nil || d.Remaining != 20 {
		t.Fatalf("window remaining = %d, %v; want 20 (charged only for admitted batches)", d.Remaining, err)
	}
}
