package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// lagging is a cached clock stuck at t0 (its refreshing goroutine starved)
// and the real time, which the test moves.
type lagging struct {
	t0, real int64
	rechecks int
}

func (l *lagging) now() int64 { return l.t0 }

func (l *lagging) recheck() int64 {
	l.rechecks++
	return l.real
}

func openLagging(t *testing.T, l *lagging, recheck bool) *memory.Store {
	t.Helper()
	cfg := memory.Config{Clock: l.now, SweepInterval: -1}
	if recheck {
		cfg.Recheck = l.recheck
	}
	st, err := memory.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// A request refused at a lagging clock's instant is decided again at the
// real time, on the lock-free hot-key path (a token bucket decided twice
// in a row) and on the locked one (a fixed window), and only refusals
// read the real clock.
func TestRecheckTakesBackLaggingRefusals(t *testing.T) {
	ctx := context.Background()
	policies := []limit.Policy{
		limit.TokenBucket{Rate: limit.Per(10, time.Second), Burst: 2},
		limit.FixedWindow{Limit: 2, Window: time.Second},
	}
	for _, p := range policies {
		for _, recheck := range []bool{false, true} {
			l := &lagging{t0: 1_700_000_000e9, real: 1_700_000_000e9}
			st := openLagging(t, l, recheck)
			for i := range 2 {
				if d, _ := st.Apply(ctx, "k", p, 1); !d.Allowed {
					t.Fatalf("%v: request %d refused within the limit", p, i+1)
				}
			}
			if l.rechecks != 0 {
				t.Errorf("%v: %d rechecks for allowed requests, want 0", p, l.rechecks)
			}
			// The real time moves a second on; the cached clock does not.
			l.real += int64(time.Second)
			d, _ := st.Apply(ctx, "k", p, 1)
			if d.Allowed != recheck {
				t.Errorf("%v, recheck %v: third request allowed %v, want %v", p, recheck, d.Allowed, recheck)
			}
			if recheck && l.rechecks != 1 {
				t.Errorf("%v: %d rechecks for one refusal, want 1", p, l.rechecks)
			}
		}
	}
}

// ApplyAll decides a refused batch again at the real time, and a batch
// still refused then charges nothing.
func TestRecheckApplyAll(t *testing.T) {
	ctx := context.Background()
	l := &lagging{t0: 1_700_000_000e9, real: 1_700_000_000e9}
	st := openLagging(t, l, true)
	batch := []limit.Request{
		{Key: "a", Policy: limit.FixedWindow{Limit: 100, Window: time.Hour}, Cost: 1},
		{Key: "b", Policy: limit.TokenBucket{Rate: limit.Per(1, time.Second), Burst: 1}, Cost: 1},
	}
	if d, _ := st.ApplyAll(ctx, batch); !d.Allowed {
		t.Fatal("first batch refused")
	}
	// Refused at the cached instant and at the real one (no time passed):
	// nothing is charged, so "a" still has 99.
	if d, _ := st.ApplyAll(ctx, batch); d.Allowed {
		t.Fatal("second batch allowed with an empty bucket")
	}
	if l.rechecks != 1 {
		t.Errorf("%d rechecks, want 1", l.rechecks)
	}
	l.real += int64(time.Second)
	d, _ := st.ApplyAll(ctx, batch)
	if !d.Allowed {
		t.Fatal("batch refused a second later in real time")
	}
	a, _ := st.Apply(ctx, "a", batch[0].Policy, 0)
	if a.Remaining != 98 {
		t.Errorf(`"a" remaining %d, want 98 (two allowed batches, the refused one charged nothing)`, a.Remaining)
	}
}
