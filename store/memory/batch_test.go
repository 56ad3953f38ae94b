package memory

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/racebuild"
	"github.com/tollgate-dev/tollgate/limit"
)

// inBatchesFor makes key its shard's hot key and switches it to batches,
// as contention does, and returns them. Promoting it charges 3.
func inBatchesFor(t *testing.T, s *Store, key string, p limit.TokenBucket) *batches {
	t.Helper()
	for range 3 {
		if d, err := s.Apply(context.Background(), key, p, 1); err != nil || !d.Allowed {
			t.Fatalf("promoting: %+v, %v", d, err)
		}
	}
	h, i := s.hash(key)
	e := s.shards[i].hot.Load()
	if e == nil || e.h != tableKey(h) {
		t.Fatal("the key was not promoted: this test would not reach the batches")
	}
	s.startBatches(e, p)
	if e.tat.Load() != inBatches {
		t.Fatal("the key did not switch to batches")
	}
	return e.b.Load()
}

// stillInBatches fails the test if key is no longer decided from b.
func stillInBatches(t *testing.T, s *Store, key string, b *batches) {
	t.Helper()
	h, i := s.hash(key)
	if e := s.shards[i].hot.Load(); e == nil || e.h != tableKey(h) || e.tat.Load() != inBatches || e.b.Load() != b {
		t.Fatal("the key left its batches: the test did not exercise them")
	}
}

// refill and decideBatched return what Store.refill and
// Store.decideBatched write.
func refill(s *Store, b *batches, i int, cost int64) (limit.Decision, bool) {
	var d limit.Decision
	ok := s.refill(&d, b, i, cost)
	return d, ok
}

func decideBatched(s *Store, b *batches, p limit.TokenBucket, cost int64) (limit.Decision, bool) {
	var d limit.Decision
	ok := s.decideBatched(&d, b, p, cost)
	return d, ok
}

// hammerHot has 16 goroutines send n requests each for key and returns
// how many were admitted.
func hammerHot(t *testing.T, s *Store, key string, p limit.Policy, n int) int64 {
	t.Helper()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range n {
				d, err := s.Apply(context.Background(), key, p, 1)
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

// TestBatchesExactAtTheLastTokens: goroutines deciding a key in batches at
// frozen instants get exactly what the bucket holds: every token of the
// burst (none left stranded in a pocket by a refusal), then exactly the
// refill, and nothing more.
func TestBatchesExactAtTheLastTokens(t *testing.T) {
	s, now := newTest(t, Config{Shards: 1})
	p := limit.TokenBucket{Rate: limit.Per(1000, time.Second), Burst: 1000}
	b := inBatchesFor(t, s, "hot", p)
	if b.size < 2 {
		t.Fatalf("batches of %d: this test needs real batches", b.size)
	}
	for i, phase := range []struct {
		step time.Duration
		want int64
	}{{0, 997}, {0, 0}, {5 * time.Millisecond, 5}, {time.Second, 1000}, {time.Millisecond, 1}} {
		*now += int64(phase.step)
		if got := hammerHot(t, s, "hot", p, 100); got != phase.want {
			t.Fatalf("phase %d (+%v): admitted %d of 1600; want exactly %d", i, phase.step, got, phase.want)
		}
		stillInBatches(t, s, "hot", b)
		if d, _ := s.Apply(context.Background(), "hot", p, 0); d.Remaining != 0 || d.NextUnitAfter != time.Millisecond {
			t.Fatalf("phase %d: a peek after the refusals: remaining %d, next unit after %v; want 0 and 1ms", i, d.Remaining, d.NextUnitAfter)
		}
	}
}

// TestBatchesRefuseOnlyWhenEveryBatchIsSpent: while one pocket holds a
// batch, decisions from another pocket drain the bucket; when it is empty
// they take that batch back and spend it before refusing.
func TestBatchesRefuseOnlyWhenEveryBatchIsSpent(t *testing.T) {
	s, _ := newTest(t, Config{Shards: 1})
	p := limit.TokenBucket{Rate: limit.Per(1, time.Hour), Burst: 1000}
	b := inBatchesFor(t, s, "hot", p)
	if len(b.pockets) < 2 || b.size < 2 {
		t.Fatalf("%d pockets, batches of %d: this test needs two pockets and real batches", len(b.pockets), b.size)
	}
	if d, ok := refill(s, b, 0, 1); !ok || !d.Allowed {
		t.Fatalf("first request from pocket 0: %+v, %v", d, ok)
	}
	held := b.pockets[0].n.Load()
	if held != b.size-1 {
		t.Fatalf("pocket 0 holds %d; want a batch of %d less the request", held, b.size)
	}
	admitted := int64(0)
	for {
		d, ok := refill(s, b, 1, 1)
		if !ok {
			t.Fatal("the locked path was asked to decide")
		}
		if !d.Allowed {
			break
		}
		admitted++
	}
	if want := int64(1000 - 3 - 1); admitted != want {
		t.Fatalf("pocket 1 admitted %d before a refusal; want %d, the bucket and pocket 0's %d", admitted, want, held)
	}
	if n, out := b.pockets[0].n.Load(), b.out.Load(); n != 0 || out != 0 {
		t.Fatalf("after the refusal pocket 0 holds %d and %d are outstanding; want both 0", n, out)
	}
	if d, _ := decideBatched(s, b, p, 1); d.Allowed {
		t.Fatal("admitted after the refusal")
	}
}

// TestBatchesTakenLongAgoAreNotSpentOnARefilledBucket: a batch left in a
// pocket while the bucket refills is part of the burst, not on top of it:
// at the later instant exactly the burst is admitted, batch included.
func TestBatchesTakenLongAgoAreNotSpentOnARefilledBucket(t *testing.T) {
	s, now := newTest(t, Config{Shards: 1})
	p := limit.TokenBucket{Rate: limit.Per(10_000, time.Second), Burst: 10_000}
	b := inBatchesFor(t, s, "hot", p)
	if d, ok := refill(s, b, 0, 1); !ok || !d.Allowed {
		t.Fatalf("first request from pocket 0: %+v, %v", d, ok)
	}
	if held := b.pockets[0].n.Load(); held < 100 {
		t.Fatalf("pocket 0 holds %d: this test needs a large batch", held)
	}
	*now += int64(10 * time.Second) // the bucket is full again, ten times over
	if got := hammerHot(t, s, "hot", p, 1000); got != 10_000 {
		t.Fatalf("admitted %d at the later instant; want exactly the burst, 10000", got)
	}
	stillInBatches(t, s, "hot", b)
}

// TestBatchesChargeSpentTokensWhenSpent: a pocket's tokens spent after
// its refiller read the clock (between that read and its taking them back)
// are charged at an instant read after they were taken back, not at the
// older one, which would let a refilled bucket forget them.
func TestBatchesChargeSpentTokensWhenSpent(t *testing.T) {
	now := int64(1_767_225_600_000_000_000)
	var spend func() // run once by the next clock read, after it read
	s, err := New(Config{Shards: 1, SweepInterval: -1, Clock: func() int64 {
		t := now
		if f := spend; f != nil {
			spend = nil
			f()
		}
		return t
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := limit.TokenBucket{Rate: limit.Per(10_000, time.Second), Burst: 10_000}
	b := inBatchesFor(t, s, "hot", p)
	if d, ok := refill(s, b, 0, 1); !ok || !d.Allowed {
		t.Fatalf("first request from pocket 0: %+v, %v", d, ok)
	}
	held := b.pockets[0].n.Load()
	spend = func() {
		now += int64(10 * time.Second)
		b.pockets[0].n.Store(0) // spent at the new instant, by other cores
	}
	if d, ok := refill(s, b, 0, 1); !ok || !d.Allowed {
		t.Fatalf("the refill that read the clock before they were spent: %+v, %v", d, ok)
	}
	if spend != nil {
		t.Fatal("the refill did not read the clock")
	}
	if got, want := hammerHot(t, s, "hot", p, 1000), 10_000-held-1; got != want {
		t.Fatalf("admitted %d at the new instant besides the %d spent from pocket 0 and the refill's request; want exactly %d", got, held, want)
	}
}

// TestBatchesReload: a new policy for a key in batches (a reload that
// changes its burst) takes every batch back under the old one and decides
// exactly under the new one: what the old burst left minus what the new
// one takes away.
func TestBatchesReload(t *testing.T) {
	s, now := newTest(t, Config{Shards: 1})
	old := limit.TokenBucket{Rate: limit.Per(1, time.Second), Burst: 1000}
	b := inBatchesFor(t, s, "hot", old)
	for range 297 {
		if d, _ := decideBatched(s, b, old, 1); !d.Allowed {
			t.Fatal("refused within the burst")
		}
	}
	if b.out.Load() == 0 {
		t.Fatal("no batch outstanding: this test would not take one back")
	}
	// 300 spent: a burst of 400 at the same rate leaves 100.
	smaller := limit.TokenBucket{Rate: limit.Per(1, time.Second), Burst: 400}
	if got := hammerHot(t, s, "hot", smaller, 100); got != 100 {
		t.Fatalf("admitted %d under the new burst; want exactly 100", got)
	}
	*now += int64(3 * time.Second)
	if got := hammerHot(t, s, "hot", smaller, 100); got != 3 {
		t.Fatalf("admitted %d after 3s; want exactly the refill, 3", got)
	}
}

// TestBatchesDemotion: a key in batches demoted while goroutines decide it
// (sweeps and batches of two through the locked path) loses no token and
// gains none: exactly the burst is admitted, whichever path each took,
// and an idle key dropped by the sweep comes back with exactly its burst.
func TestBatchesDemotion(t *testing.T) {
	s, now := newTest(t, Config{Shards: 1})
	ctx := context.Background()
	p := limit.TokenBucket{Rate: limit.Per(1, time.Hour), Burst: 500}
	wide := limit.FixedWindow{Limit: 1 << 40, Window: time.Hour}
	inBatchesFor(t, s, "hot", p)
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for g := range 10 {
		wg.Go(func() {
			for n := range 300 {
				var d limit.Decision
				var err error
				switch {
				case g == 0 && n%50 == 0:
					s.sweepShard(&s.shards[0], s.now())
					continue
				case g == 1 && n%50 == 0:
					d, err = s.ApplyAll(ctx, []limit.Request{{Key: "hot", Policy: p, Cost: 1}, {Key: "other", Policy: wide, Cost: 1}})
				case n%100 == 0:
					// Switch to batches again, as contention would.
					if e := s.shards[0].hot.Load(); e != nil {
						s.startBatches(e, p)
					}
					fallthrough
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
	if got := admitted.Load(); got != 497 {
		t.Fatalf("admitted %d; want exactly the burst less the 3 that promoted the key, 497", got)
	}
	// Long after, the key is idle: the sweep drops it, batches and all.
	*now += int64(1000 * time.Hour)
	b := inBatchesFor(t, s, "hot", p) // 3 more
	if d, ok := refill(s, b, 0, 1); !ok || !d.Allowed {
		t.Fatalf("a request from pocket 0: %+v, %v", d, ok)
	}
	*now += int64(1000 * time.Hour)
	s.sweepShard(&s.shards[0], *now)
	if st := s.Stats(); st.Keys != 0 {
		t.Fatalf("%d keys after the sweep; want the idle hot key dropped", st.Keys)
	}
	if got := hammerHot(t, s, "hot", p, 100); got != 500 {
		t.Fatalf("admitted %d after the idle key was dropped; want exactly its burst, 500", got)
	}
}

// TestBatchesBeingLimitedIsNeverEvicted: a key exhausted from its batches
// is marked limited when it is written back, so a full store evicts
// another key rather than give it its burst back.
func TestBatchesBeingLimitedIsNeverEvicted(t *testing.T) {
	s, _ := newTest(t, Config{MaxKeys: 2, Shards: 1})
	ctx := context.Background()
	fast := limit.TokenBucket{Rate: limit.Per(10, time.Second), Burst: 50}
	slow := limit.TokenBucket{Rate: limit.Per(1, time.Second), Burst: 5}
	b := inBatchesFor(t, s, "hot", fast)
	for {
		d, _ := decideBatched(s, b, fast, 1)
		if !d.Allowed {
			break
		}
	}
	for i := range 3 {
		if _, err := s.Apply(ctx, "new"+string(rune('a'+i)), slow, 1); err != nil {
			t.Fatal(err)
		}
	}
	if d, _ := s.Apply(ctx, "hot", fast, 1); d.Allowed {
		t.Fatalf("the exhausted key was evicted and admitted again (stats %+v)", s.Stats())
	}
}

// TestBatchesNoAllocs: deciding from a pocket, refilling it and refusing
// allocate nothing.
func TestBatchesNoAllocs(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("sync.Pool drops values at random under the race detector")
	}
	s, now := newTest(t, Config{Shards: 1})
	ctx := context.Background()
	tb := limit.TokenBucket{Rate: limit.Per(1000, time.Second), Burst: 1000}
	var p limit.Policy = tb
	inBatchesFor(t, s, "hot", tb)
	if n := testing.AllocsPerRun(2000, func() {
		*now += int64(100 * time.Microsecond)
		s.Apply(ctx, "hot", p, 1)
	}); n != 0 {
		t.Fatalf("%v allocations per decision; want 0", n)
	}
}

// BenchmarkHotKeyDesigns: one key decided from every goroutine of
// b.RunParallel (always allowed, precise clock), by each design: "cas",
// the compare-and-swap loop alone (the key kept from switching);
// "batches"; and "one_pocket", batches with every processor on the same
// pocket (the stress case of hints that all collide: one contended line,
// as with padding removed). cpu-ns/op is the process's CPU time per
// decision.
func BenchmarkHotKeyDesigns(b *testing.B) {
	tb := limit.TokenBucket{Rate: limit.Per(1_000_000_000, time.Second), Burst: 1_000_000}
	var p limit.Policy = tb
	ctx := context.Background()
	for _, design := range []string{"cas", "batches", "one_pocket"} {
		b.Run(design, func(b *testing.B) {
			s, err := New(Config{SweepInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			for range 3 {
				s.Apply(ctx, "hot", p, 1)
			}
			h, i := s.hash("hot")
			e := s.shards[i].hot.Load()
			if e == nil || e.h != tableKey(h) {
				b.Fatal("the key was not promoted")
			}
			switch design {
			case "cas":
				e.fails.Store(math.MinInt32) // never contended enough to switch
			case "batches":
				s.startBatches(e, tb)
			case "one_pocket":
				s.startBatches(e, tb)
				e.b.Load().mask = 0
			}
			b.ReportAllocs()
			start := processCPU(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					s.Apply(ctx, "hot", p, 1)
				}
			})
			b.ReportMetric(float64(processCPU(b)-start)/float64(b.N), "cpu-ns/op")
			if (design == "cas") != (e.tat.Load() != inBatches) {
				b.Fatal("the key changed design during the run")
			}
		})
	}
}

// processCPU returns the process's CPU time (user and system) so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
