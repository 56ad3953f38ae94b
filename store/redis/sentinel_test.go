package redis

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/redis/redisconf"
)

// unbounded is a policy that refuses nothing at any load these tests make.
var unbounded = limit.TokenBucket{Rate: limit.Per(1_000_000, time.Second), Burst: 1_000_000}

// TestSentinelFailover kills the master of a Sentinel set under load:
// every decision is answered (by Redis, or by its failure mode while
// there is no master), none is an error, and decisions go back to Redis
// on the promoted replica without a restart. The time from the kill to
// the first decision on the new master is logged.
func TestSentinelFailover(t *testing.T) {
	set := redistest.StartSentinel(t, 500*time.Millisecond, 2*time.Second)
	s, err := New(context.Background(), Config{
		Addrs: set.Addrs(), MasterName: redistest.SentinelMaster,
		Timeout: 50 * time.Millisecond, BreakerFailures: 3, BreakerCooldown: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !decidedOnRedis(t, s.WithFailure(failmode.Closed).(rule).s, set.Primary, "before") {
		t.Fatal("not decided on the master before the failover")
	}

	var (
		stop   = make(chan struct{})
		wg     sync.WaitGroup
		errs   atomic.Int64
		total  atomic.Int64
		closed atomic.Int64 // failmode.Closed refusals: decisions by the failure mode
	)
	for w, mode := range []failmode.Mode{failmode.Open, failmode.Closed, failmode.Local, failmode.Closed} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := s.WithFailure(mode)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if i%10 == 0 {
					time.Sleep(time.Millisecond) // pace the load: about 10k decisions/s per worker at most
				}
				d, err := st.Apply(context.Background(), "load", unbounded, 1)
				total.Add(1)
				switch {
				case err != nil:
					errs.Add(1)
					t.Errorf("worker %d (%v): %v", w, mode, err)
				case mode != failmode.Closed && !d.Allowed:
					t.Errorf("worker %d (%v): refused by a policy that refuses nothing", w, mode)
				case mode == failmode.Closed && !d.Allowed:
					closed.Add(1)
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	killed := time.Now()
	set.Primary.Kill()

	// Wait for a decision on the replica, now master.
	deadline := killed.Add(20 * time.Second)
	probe := s.WithFailure(failmode.Closed)
	var recovered time.Duration
	for {
		d, err := probe.Apply(context.Background(), "after", generous, 1)
		if err == nil && d.Allowed {
			recovered = time.Since(killed)
			break
		}
		if time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			t.Fatalf("no decision on Redis 20s after the master was killed (stats %+v)", s.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	set.WaitMaster(t, set.Replica.Addr)
	if set.Replica.CLI(t, "exists", "tollgate:{after}") != "1" {
		t.Fatal("the decision after the failover is not on the promoted replica")
	}
	if closed.Load() == 0 {
		t.Fatal("no decision followed the failure mode during the failover")
	}
	t.Logf("failover: %d decisions, %d by failmode.Closed's failure mode, 0 errors; back on Redis %v after the kill (down-after 500ms)",
		total.Load(), closed.Load(), recovered.Round(time.Millisecond))
}

// A Sentinel set speaking only TLS: the store asks the Sentinels over TLS
// and decides on the master over TLS, and follows a failover.
func TestSentinelTLS(t *testing.T) {
	pki := redistest.NewPKI(t)
	set := redistest.StartSentinelTLS(t, 500*time.Millisecond, 2*time.Second, redistest.TLSOptions{PKI: pki})
	tc, err := (redisconf.TLSFiles{CAFile: pki.CAFile}).Load(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), Config{
		Addrs: set.Addrs(), MasterName: redistest.SentinelMaster, TLS: tc,
		OnFailure: failmode.Closed, Timeout: 2 * time.Second, BreakerCooldown: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.DialError(); err != nil {
		t.Fatal(err)
	}
	if !decidedOnRedis(t, s, set.Primary, "tls-before") {
		t.Fatal("not decided on the master over TLS")
	}
	set.Primary.Kill()
	set.WaitMaster(t, set.Replica.Addr)
	deadline := time.Now().Add(20 * time.Second)
	for !decidedOnRedis(t, s, set.Replica, "tls-after") {
		if time.Now().After(deadline) {
			t.Fatal("not decided on the promoted replica over TLS")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
