package redis

import (
	"context"
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
