package redis

import (
	"context"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/limit/limittest"
)

// TestCacheHitAllocs: a refusal answered by the over-limit cache, the path
// a hot abusive key takes, allocates nothing.
func TestCacheHitAllocs(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }})
	p := limit.Policy(limit.FixedWindow{Limit: 1, Window: time.Hour})
	ctx := context.Background()
	s.Apply(ctx, "hot", p, 1)
	s.Apply(ctx, "hot", p, 1) // refused: cached
	if n := testing.AllocsPerRun(1000, func() {
		if d, _ := s.Apply(ctx, "hot", p, 1); d.Allowed {
			t.Fatal("allowed")
		}
	}); n != 0 {
		t.Fatalf("cache hit: %v allocs", n)
	}
}

// BenchmarkApply is one caller's round trip to a local Redis (a token
// bucket on 10,000 keys), with its allocations.
func BenchmarkApply(b *testing.B) {
	srv := redistest.Start(b)
	s, err := New(context.Background(), Config{Addrs: []string{srv.Addr}, CacheSize: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	p := limit.Policy(limit.TokenBucket{Rate: limit.Per(100, time.Second), Burst: 100})
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = "k" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := s.Apply(ctx, keys[i%len(keys)], p, 1); err != nil {
				b.Fatal(err)
			}
			i += 7
		}
	})
}

// BenchmarkApplyRedisDown is a decision while Redis is dead and the breaker
// open: the failure mode answers without a round trip.
func BenchmarkApplyRedisDown(b *testing.B) {
	srv := redistest.Start(b)
	s, err := New(context.Background(), Config{Addrs: []string{srv.Addr}, CacheSize: -1, BreakerCooldown: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	srv.Kill()
	p := limit.Policy(limit.TokenBucket{Rate: limit.Per(100, time.Second), Burst: 100})
	ctx := context.Background()
	for !s.Stats().BreakerOpen {
		s.Apply(ctx, "k", p, 1)
	}
	for _, m := range []failmode.Mode{failmode.Open, failmode.Closed, failmode.Local} {
		st := s.WithFailure(m)
		b.Run("mode="+string(m), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				st.Apply(ctx, "k", p, 1)
			}
		})
	}
}
