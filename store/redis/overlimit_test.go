package redis

import (
	"context"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/limit/limittest"
)

// TestOverLimitCacheAnswersLocally: once refused until T, the key is
// answered without Redis until T, and from T on Redis decides again.
func TestOverLimitCacheAnswersLocally(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }})
	p := limit.FixedWindow{Limit: 2, Window: time.Second}
	ctx := context.Background()
	for range 2 {
		if d, _ := s.Apply(ctx, "k", p, 1); !d.Allowed {
			t.Fatal("refused under the limit")
		}
	}
	d, _ := s.Apply(ctx, "k", p, 1)
	if d.Allowed || d.RetryAfter != time.Second {
		t.Fatalf("third request: %+v", d)
	}
	srv.Kill() // from here, only the cache can answer a refusal
	now += int64(400 * time.Millisecond)
	d, err := s.Apply(ctx, "k", p, 1)
	if err != nil || d.Allowed || d.RetryAfter != 600*time.Millisecond {
		t.Fatalf("cached refusal: %+v, %v", d, err)
	}
	if st := s.Stats(); st.CacheHits != 1 || st.Decisions != 3 || st.Failures != 0 {
		t.Fatalf("stats %+v", st)
	}
	srv.Restart(t)
	ok := 0
	waitFor(t, func() bool { // each broken connection fails once, then redials
		before := s.Stats().Decisions
		s.Apply(ctx, "other", limit.TokenBucket{Rate: limit.Per(1000, time.Second)}, 1)
		if s.Stats().Decisions == before+1 {
			ok++
		} else {
			ok = 0
		}
		return ok == 10
	})
	now += int64(600 * time.Millisecond) // T: Redis decides again (a new window)
	before := s.Stats()
	if d, _ := s.Apply(ctx, "k", p, 1); !d.Allowed {
		t.Fatalf("at T: %+v", d)
	}
	if st := s.Stats(); st.CacheHits != 1 || st.Decisions != before.Decisions+1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestOverLimitCachePolicyChange is envoyproxy/ratelimit#1077: a refusal
// cached under one policy must not answer for a changed policy (a raised
// limit after a config reload).
func TestOverLimitCachePolicyChange(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }})
	ctx := context.Background()
	old := limit.FixedWindow{Limit: 1, Window: time.Hour}
	s.Apply(ctx, "k", old, 1)
	if d, _ := s.Apply(ctx, "k", old, 1); d.Allowed {
		t.Fatal("over the old limit but allowed")
	}
	if d, _ := s.Apply(ctx, "k", old, 1); d.Allowed || s.Stats().CacheHits != 1 {
		t.Fatalf("not cached: %+v", s.Stats())
	}
	raised := limit.FixedWindow{Limit: 5, Window: time.Hour}
	d, _ := s.Apply(ctx, "k", raised, 1)
	if !d.Allowed || d.Remaining != 3 {
		t.Fatalf("raised limit: %+v (the stale refusal answered)", d)
	}
	if st := s.Stats(); st.CacheHits != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestOverLimitCacheSmallerCost: a refusal for cost 3 does not refuse a
// request of cost 1 that fits.
func TestOverLimitCacheSmallerCost(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }})
	ctx := context.Background()
	p := limit.FixedWindow{Limit: 3, Window: time.Hour}
	s.Apply(ctx, "k", p, 2)
	if d, _ := s.Apply(ctx, "k", p, 3); d.Allowed {
		t.Fatal("cost 3 allowed over the limit")
	}
	if d, _ := s.Apply(ctx, "k", p, 1); !d.Allowed {
		t.Fatal("cost 1 refused by the cost-3 refusal")
	}
}

// TestRedisSlow blocks the server (DEBUG SLEEP): each request must be
// answered by its failure mode after about the timeout, not after the
// stall.
func TestRedisSlow(t *testing.T) {
	srv := redistest.Start(t, "--enable-debug-command", "yes")
	s := open(t, srv.Addr, Config{Timeout: 20 * time.Millisecond, BreakerFailures: 1000, CacheSize: -1})
	p := limit.FixedWindow{Limit: 100, Window: time.Hour}
	ctx := context.Background()
	if _, err := s.Apply(ctx, "slow", p, 1); err != nil {
		t.Fatal(err)
	}
	stalled := make(chan struct{})
	go func() {
		defer close(stalled)
		srv.CLI(t, "debug", "sleep", "0.5")
	}()
	waitFor(t, func() bool { // the stall has begun once PING stops answering quickly
		c := s.conn.Load().client
		_, err := c.Do(ctx, c.B().Ping().Build()).ToString()
		return err != nil
	})
	for _, m := range []FailMode{FailClosed, FailOpen} {
		start := time.Now()
		d, err := s.WithFailure(m).Apply(ctx, "slow", p, 1)
		el := time.Since(start)
		if err != nil || d.Allowed != (m == FailOpen) {
			t.Fatalf("%v: %+v %v", m, d, err)
		}
		if el > 150*time.Millisecond {
			t.Fatalf("%v answered after %v; want about the 20ms timeout", m, el)
		}
	}
	<-stalled
	if st := s.Stats(); st.Timeouts == 0 {
		t.Fatalf("no timeout counted: %+v", st)
	}
}
