package redis

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
)

// TestRedisDown kills redis-server in the middle of a load: every request
// must get its rule's configured answer within a bounded latency, and the
// store must be back on Redis within a second of the restart, with no
// goroutine left behind after Close.
func TestRedisDown(t *testing.T) {
	before := runtime.NumGoroutine()
	srv := redistest.Start(t)
	s, err := New(context.Background(), Config{
		Addrs: []string{srv.Addr}, Timeout: 20 * time.Millisecond,
		BreakerFailures: 3, BreakerCooldown: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	// A policy Redis never refuses: any refusal is the failure mode's.
	p := limit.TokenBucket{Rate: limit.Per(1_000_000, time.Second), Burst: 1_000_000}
	modes := []FailMode{FailOpen, FailClosed, FailLocal}

	var (
		down      atomic.Bool
		slowest   atomic.Int64
		wrong     atomic.Int64
		total     atomic.Int64
		stop      = make(chan struct{})
		wg        sync.WaitGroup
		downCount [3]atomic.Int64
	)
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mode := modes[w%3]
			st := s.WithFailure(mode)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// Pace the load generator (about 10k req/s per worker):
				// an answer without I/O must not starve the machine.
				if i%10 == 0 {
					time.Sleep(time.Millisecond)
				}
				wasDown := down.Load()
				start := time.Now()
				d, err := st.Apply(context.Background(), "down", p, 1)
				el := time.Since(start)
				total.Add(1)
				for {
					old := slowest.Load()
					if int64(el) <= old || slowest.CompareAndSwap(old, int64(el)) {
						break
					}
				}
				if err != nil {
					t.Errorf("mode %v: error %v", mode, err)
					wrong.Add(1)
					continue
				}
				if wasDown && down.Load() {
					downCount[w%3].Add(1)
					if mode == FailClosed && d.Allowed || mode != FailClosed && !d.Allowed {
						wrong.Add(1)
						t.Errorf("mode %v while down: allowed=%v", mode, d.Allowed)
					}
				}
			}
		}()
	}
	waitFor(t, func() bool { return s.Stats().Decisions > 300 })
	down.Store(true)
	srv.Kill()
	waitFor(t, func() bool { return s.Stats().BreakerOpen })
	waitFor(t, func() bool {
		st := s.Stats()
		return st.FailOpen > 200 && st.FailClosed > 200 && st.FailLocal > 200
	})
	down.Store(false)
	srv.Restart(t)
	restarted := time.Now()
	base := s.Stats().Decisions
	waitFor(t, func() bool { return s.Stats().Decisions > base+100 })
	recovery := time.Since(restarted)
	close(stop)
	wg.Wait()
	st := s.Stats()
	t.Logf("requests %d, slowest %v, recovery %v, stats %+v", total.Load(), time.Duration(slowest.Load()), recovery, st)
	if recovery > time.Second {
		t.Errorf("recovery took %v, want under 1s", recovery)
	}
	// Bounded means the 20ms timeout plus scheduling, not a hang: the bound
	// leaves room for CI, where every package's race-enabled tests share
	// two cores with this one.
	if max := time.Duration(slowest.Load()); max > time.Second {
		t.Errorf("slowest request %v: want bounded by the 20ms timeout (plus scheduling)", max)
	}
	if st.BreakerTrips == 0 || st.ShortCircuits == 0 {
		t.Errorf("breaker never opened: %+v", st)
	}
	s.Close()
	srv.Kill()
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before+2 })
}

// waitFor polls cond (for a real process or real load, not virtual time)
// for up to 10s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("condition not met within 10s; goroutines:\n%s", buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(2 * time.Millisecond)
	}
}
