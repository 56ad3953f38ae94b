package memory

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

func newTest(t *testing.T, cfg Config) (*Store, *int64) {
	t.Helper()
	now := new(int64)
	*now = 1_767_225_600_000_000_000
	cfg.Clock = func() int64 { return *now }
	cfg.SweepInterval = -1
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, now
}

func TestBoundedKeys(t *testing.T) {
	s, _ := newTest(t, Config{MaxKeys: 4, Shards: 1})
	p := limit.TokenBucket{Rate: limit.Per(1, time.Hour), Burst: 10}
	for i := range 100 {
		if _, err := s.Apply(context.Background(), fmt.Sprint("k", i), p, 1); err != nil {
			t.Fatal(err)
		}
	}
	st := s.Stats()
	if st.Keys > 4 {
		t.Fatalf("%d keys live; MaxKeys is 4", st.Keys)
	}
	if st.Evictions != 96 {
		t.Fatalf("%d evictions; want 96", st.Evictions)
	}
}

// TestEvictionPrefersIdle: under pressure an idle key goes first, and
// among busy keys the one closest to its full allowance.
func TestEvictionPrefersIdle(t *testing.T) {
	s, now := newTest(t, Config{MaxKeys: 3, Shards: 1})
	ctx := context.Background()
	p := limit.TokenBucket{Rate: limit.Per(1, time.Second), Burst: 100}
	mustApply := func(key string, cost int64) limit.Decision {
		d, err := s.Apply(ctx, key, p, cost)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	mustApply("short", 1)  // idle after 1s
	mustApply("heavy", 90) // idle after 90s
	mustApply("mid", 30)   // idle after 30s
	*now += int64(2 * time.Second)
	mustApply("new1", 1) // "short" is idle: dropped, not evicted
	if st := s.Stats(); st.Evictions != 0 || st.Expired != 1 {
		t.Fatalf("stats %+v; want the idle key expired, nothing evicted", st)
	}
	mustApply("new2", 1) // evicts new1 (idle soonest)
	if d := mustApply("heavy", 0); d.Remaining != 100-90+2 {
		t.Fatalf("heavy was evicted (remaining %d)", d.Remaining)
	}
	if d := mustApply("mid", 0); d.Remaining != 100-30+2 {
		t.Fatalf("mid was evicted (remaining %d)", d.Remaining)
	}
}

func TestSweepDropsIdleStates(t *testing.T) {
	s, now := newTest(t, Config{Shards: 4})
	ctx := context.Background()
	for i := range 50 {
		s.Apply(ctx, fmt.Sprint("tb", i), limit.TokenBucket{Rate: limit.Per(1, time.Second)}, 1)
		s.Apply(ctx, fmt.Sprint("log", i), limit.SlidingLog{Limit: 5, Window: time.Minute}, 1)
	}
	*now += int64(30 * time.Second)
	for i := range s.shards {
		s.sweepShard(&s.shards[i], *now)
	}
	if st := s.Stats(); st.Keys != 50 || st.Expired != 50 {
		t.Fatalf("after 30s: %+v; want the 50 token buckets gone and the 50 logs kept", st)
	}
	*now += int64(30 * time.Second)
	for i := range s.shards {
		s.sweepShard(&s.shards[i], *now)
	}
	if st := s.Stats(); st.Keys != 0 {
		t.Fatalf("after 60s: %+v; want every log gone", st)
	}
}

func TestSweeperStopsOnClose(t *testing.T) {
	s, err := New(Config{SweepInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	select {
	case <-s.done:
	default:
		t.Fatal("sweeper still running after Close")
	}
	s.Close() // twice is fine
}

func TestBadInput(t *testing.T) {
	s, _ := newTest(t, Config{})
	ctx := context.Background()
	if _, err := s.Apply(ctx, "k", limit.TokenBucket{Rate: limit.Per(1, time.Second)}, -1); !errors.Is(err, limit.ErrNegativeCost) {
		t.Errorf("negative cost: %v", err)
	}
	if _, err := s.Apply(ctx, "k", limit.TokenBucket{}, 1); !errors.Is(err, limit.ErrInvalidPolicy) {
		t.Errorf("zero policy: %v", err)
	}
	if _, err := s.ApplyAll(ctx, []limit.Request{{Key: "k", Policy: limit.FixedWindow{}, Cost: 1}}); !errors.Is(err, limit.ErrInvalidPolicy) {
		t.Errorf("zero policy in a batch: %v", err)
	}
	if _, err := New(Config{MaxKeys: -1}); err == nil {
		t.Error("negative MaxKeys accepted")
	}
	long := string(make([]byte, 1<<20))
	if d, err := s.Apply(ctx, long, limit.FixedWindow{Limit: 1, Window: time.Second}, 1); err != nil || !d.Allowed {
		t.Errorf("a 1 MiB key: %+v, %v", d, err)
	}
}

// TestNoAllocs: a decision for an existing key allocates nothing, for
// every algorithm, alone and in a batch.
func TestNoAllocs(t *testing.T) {
	s, now := newTest(t, Config{})
	ctx := context.Background()
	sec := time.Second
	pols := []limit.Policy{
		limit.TokenBucket{Rate: limit.Per(1000, sec), Burst: 1000},
		limit.FixedWindow{Limit: 1000, Window: sec},
		limit.SlidingWindow{Limit: 1000, Window: sec},
		limit.LeakyBucket{Rate: limit.Per(1000, sec), Burst: 1000},
		limit.SlidingLog{Limit: 1000, Window: sec},
	}
	for _, p := range pols {
		s.Apply(ctx, "key", p, 1) // create the key (and warm the log buffer)
		for range 2000 {
			*now += int64(time.Millisecond)
			s.Apply(ctx, "key", p, 1)
		}
		if n := testing.AllocsPerRun(1000, func() {
			*now += int64(time.Millisecond)
			s.Apply(ctx, "key", p, 1)
		}); n != 0 {
			t.Errorf("%v: %.1f allocs per decision; want 0", p, n)
		}
	}
	reqs := []limit.Request{{Key: "a", Policy: pols[0], Cost: 1}, {Key: "b", Policy: pols[1], Cost: 1}}
	s.ApplyAll(ctx, reqs)
	if n := testing.AllocsPerRun(1000, func() { s.ApplyAll(ctx, reqs) }); n != 0 {
		t.Errorf("ApplyAll: %.1f allocs; want 0", n)
	}
}

// TestStaleClockAfterLockWait is the regression test for a goroutine that
// read the clock, waited for a busy key's lock, and then decided with that
// stale instant: under a rule that should never refuse, it was refused
// (86 of 120k requests through the gateway). A decision whose reading lags
// the shard's latest one reads the clock again under the lock.
func TestStaleClockAfterLockWait(t *testing.T) {
	start := int64(1_767_225_600_000_000_000)
	var readings []int64 // what the clock answers, in order; the last repeats
	clock := func() int64 {
		v := readings[0]
		if len(readings) > 1 {
			readings = readings[1:]
		}
		return v
	}
	s, err := New(Config{Shards: 1, SweepInterval: -1, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	p := limit.TokenBucket{Rate: limit.Per(1, time.Second), Burst: 1}
	sec := int64(time.Second)
	readings = []int64{start + sec}
	if d, _ := s.Apply(ctx, "k", p, 1); !d.Allowed { // TAT 2s
		t.Fatal("first request refused")
	}
	// Read 0.9s, then waited while the decision at 1s went first: decides
	// at the fresh reading 1.2s, 0.8s before the TAT.
	readings = []int64{start + 9*sec/10, start + 12*sec/10}
	if d, _ := s.Apply(ctx, "k", p, 0); d.ResetAfter != 800*time.Millisecond {
		t.Fatalf("decided at a stale instant: reset-after %v; want 800ms", d.ResetAfter)
	}
	readings = []int64{start + 11*sec/10, start + 15*sec/10}
	d, err := s.ApplyAll(ctx, []limit.Request{{Key: "k", Policy: p, Cost: 0}})
	if err != nil || d.ResetAfter != 500*time.Millisecond {
		t.Fatalf("batch decided at a stale instant: reset-after %v, %v; want 500ms", d.ResetAfter, err)
	}
}
