package memory

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// TestHotKeyDemotionIsExact: while goroutines decide a hot token-bucket key
// lock-free, others keep demoting it (batches through the locked path and
// sweeps). At one frozen instant exactly the burst is admitted, whichever
// path each request took.
func TestHotKeyDemotionIsExact(t *testing.T) {
	s, _ := newTest(t, Config{Shards: 1})
	ctx := context.Background()
	p := limit.TokenBucket{Rate: limit.Per(1, time.Hour), Burst: 500}
	wide := limit.FixedWindow{Limit: 1 << 40, Window: time.Hour}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for g := range 10 {
		wg.Go(func() {
			for n := range 300 {
				var d limit.Decision
				var err error
				switch {
				case g == 0 && n%3 == 0:
					s.sweepShard(&s.shards[0], s.now())
					continue
				case g < 3:
					d, err = s.ApplyAll(ctx, []limit.Request{{Key: "hot", Policy: p, Cost: 1}, {Key: "other", Policy: wide, Cost: 1}})
				default:
					d, err = s.Apply(ctx, "hot", p, 1)
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
	if got := admitted.Load(); got != 500 {
		t.Fatalf("admitted %d; want exactly the burst, 500", got)
	}
	if d, _ := s.Apply(ctx, "hot", p, 0); d.Remaining != 0 {
		t.Fatalf("remaining %d after the burst; want 0", d.Remaining)
	}
}

// TestHotKeyRecheck: a hot key refused at a lagging clock's instant is
// decided at Config.Recheck's, on the lock-free path.
func TestHotKeyRecheck(t *testing.T) {
	cached, real := int64(1_700_000_000e9), int64(1_700_000_000e9)
	s, err := New(Config{Shards: 1, SweepInterval: -1, Clock: func() int64 { return cached }, Recheck: func() int64 { return real }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	p := limit.TokenBucket{Rate: limit.Per(10, time.Second), Burst: 3}
	for range 3 {
		if d, _ := s.Apply(ctx, "k", p, 1); !d.Allowed {
			t.Fatal("refused within the burst")
		}
	}
	if s.shards[0].hot.Load() == nil {
		t.Fatal("the key was not promoted: this test would not reach the hot path")
	}
	real += int64(time.Second)
	if d, _ := s.Apply(ctx, "k", p, 1); !d.Allowed {
		t.Fatal("refused at the cached instant, a second behind the real time")
	}
	if s.shards[0].hot.Load() == nil {
		t.Fatal("the hot key was demoted: the locked path decided")
	}
}

// TestHotKeyBeingLimitedIsNeverEvicted: a token-bucket key exhausted on
// the lock-free path is marked limited when it is written back, so a full
// store evicts another key rather than give it its burst back, even when
// its bucket is the one that becomes idle soonest.
func TestHotKeyBeingLimitedIsNeverEvicted(t *testing.T) {
	s, _ := newTest(t, Config{MaxKeys: 2, Shards: 1})
	ctx := context.Background()
	fast := limit.TokenBucket{Rate: limit.Per(10, time.Second), Burst: 5} // idle 0.5s after its burst
	slow := limit.TokenBucket{Rate: limit.Per(1, time.Second), Burst: 5}  // idle 1s after one request
	for range 5 {
		if d, _ := s.Apply(ctx, "hot", fast, 1); !d.Allowed {
			t.Fatal("refused within the burst")
		}
	}
	if s.shards[0].hot.Load() == nil {
		t.Fatal("the key was not promoted: this test would not reach the hot path")
	}
	for i := range 3 {
		if _, err := s.Apply(ctx, fmt.Sprint("new", i), slow, 1); err != nil {
			t.Fatal(err)
		}
	}
	if d, _ := s.Apply(ctx, "hot", fast, 1); d.Allowed {
		t.Fatalf("the exhausted hot key was evicted and admitted again (stats %+v)", s.Stats())
	}
}

// TestHotKeyReadsTheClockOnce: a hot key's decision reads the clock once,
// after the state it decides on, allowed or refused, on the
// compare-and-swap path and from batches: no charge in that state can be
// later than the instant, so a refusal needs no second reading (before,
// every refusal read the clock twice, the flood's cost).
func TestHotKeyReadsTheClockOnce(t *testing.T) {
	now, reads := int64(1_767_225_600_000_000_000), 0
	s, err := New(Config{Shards: 1, SweepInterval: -1, Clock: func() int64 { reads++; return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	p := limit.TokenBucket{Rate: limit.Per(1, time.Hour), Burst: 5}
	for range 3 {
		s.Apply(ctx, "k", p, 1)
	}
	e := s.shards[0].hot.Load()
	if e == nil {
		t.Fatal("the key was not promoted: this test would not reach the hot path")
	}
	check := func(path string, wantAllowed bool) {
		t.Helper()
		reads = 0
		if d, _ := s.Apply(ctx, "k", p, 1); d.Allowed != wantAllowed || reads != 1 {
			t.Fatalf("%s: allowed %v after %d clock reads; want %v after 1", path, d.Allowed, reads, wantAllowed)
		}
	}
	check("compare-and-swap, allowed", true)
	check("compare-and-swap, allowed", true)
	check("compare-and-swap, refused", false)
	s.startBatches(e, p)
	check("batches, refused with nothing outstanding", false)
}
