package redis

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/limit/limittest"
)

// TestZeroCostCheckOfOverchargedKeyHasNothingLeft: Sync adds admissions
// made elsewhere unconditionally, so a key can hold more than its capacity.
// A zero-cost check of it then reports nothing left (never a negative
// Remaining), from the one-request scripts and from the ApplyAll script,
// as package limit does.
func TestZeroCostCheckOfOverchargedKeyHasNothingLeft(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }, CacheSize: -1})
	ctx := context.Background()
	for i, p := range []limit.Stateful{
		limit.TokenBucket{Rate: limit.Per(10, time.Second), Burst: 20},
		limit.FixedWindow{Limit: 20, Window: time.Second},
		limit.SlidingWindow{Limit: 20, Window: time.Second},
		limit.LeakyBucket{Rate: limit.Per(10, time.Second), Burst: 20, Mode: limit.Police},
	} {
		key := "over" + string(rune('a'+i))
		charges := []Charge{{Key: key, Policy: p, Cost: 50}}
		if err := s.Sync(ctx, charges); err != nil {
			t.Fatal(err)
		}
		_, want := p.Decide(charges[0].State, now, 0)
		one, err := s.Apply(ctx, key, p, 0)
		if err != nil {
			t.Fatal(err)
		}
		all, err := s.ApplyAll(ctx, []limit.Request{{Key: key, Policy: p}, {Key: key + "-idle", Policy: p}})
		if err != nil {
			t.Fatal(err)
		}
		if one.Remaining != 0 || all.Remaining != 0 {
			t.Errorf("%v: zero-cost check of an over-charged key: Remaining %d (Apply), %d (ApplyAll), want 0", p, one.Remaining, all.Remaining)
		}
		if !same(one, want) {
			t.Errorf("%v: Apply\n got  %+v\n want %+v", p, one, want)
		}
	}
}

// TestStateWithNegativeCountsIsAbsent: a window key holding a negative
// count (written by no algorithm) is decided as a fresh key, as package
// limit decides it.
func TestStateWithNegativeCountsIsAbsent(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base + int64(30*time.Second)
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }, CacheSize: -1})
	min := int64(time.Minute)
	idx := now / min
	for i, c := range []struct {
		p  limit.Stateful
		st limit.State
	}{
		{limit.FixedWindow{Limit: 5, Window: time.Minute}, limit.State{A: idx, B: -100, Idle: (idx + 1) * min}},
		{limit.SlidingWindow{Limit: 5, Window: time.Minute}, limit.State{A: -100, B: 2, Idle: (idx + 2) * min}},
		{limit.SlidingWindow{Limit: 5, Window: time.Minute}, limit.State{A: 1, B: -1 << 40, Idle: (idx + 2) * min}},
	} {
		key := fmt.Sprintf("neg%d", i)
		srv.CLI(t, "set", "tollgate:{"+key+"}", fmt.Sprintf("%d %d %d", c.st.A, c.st.B, c.st.Idle/1000), "px", "60000")
		got, err := s.Apply(context.Background(), key, c.p, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, want := c.p.Decide(c.st, now, 1); !same(got, want) || got.Remaining != 4 {
			t.Errorf("%v reading %+v:\n got  %+v\n want %+v (a fresh key)", c.p, c.st, got, want)
		}
	}
}
