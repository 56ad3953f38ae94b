package memory

import (
	"context"
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
