package redis

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
)

// IncrExpire is INCRBY and EXPIRE on the keys as given (no prefix, no
// hash tag); Counts is GET, a missing key 0; an error reply is the
// caller's error, no failure mode.
func TestPlainCounters(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv.Addr, Config{Timeout: 2 * time.Second})
	ctx := context.Background()
	out := make([]int64, 2)
	for range 2 {
		if err := s.IncrExpire(ctx, []string{"d_k_a_60", "d_k_b_60"}, []int64{3, 0}, []int64{60, 3600}, out); err != nil {
			t.Fatal(err)
		}
	}
	if out[0] != 6 || out[1] != 0 {
		t.Fatalf("counts %v, want [6 0]", out)
	}
	if v := srv.CLI(t, "GET", "d_k_a_60"); v != "6" {
		t.Fatalf("GET d_k_a_60 = %q", v)
	}
	for key, max := range map[string]int{"d_k_a_60": 60, "d_k_b_60": 3600} {
		ttl, _ := strconv.Atoi(srv.CLI(t, "TTL", key))
		if ttl <= max-5 || ttl > max {
			t.Errorf("TTL %s = %d, want about %d", key, ttl, max)
		}
	}
	if err := s.Counts(ctx, []string{"d_k_a_60", "missing"}, []int64{60, 60}, out); err != nil || out[0] != 6 || out[1] != 0 {
		t.Fatalf("Counts: %v %v", out, err)
	}
	srv.CLI(t, "HSET", "h", "f", "v")
	err := s.IncrExpire(ctx, []string{"h"}, []int64{1}, []int64{60}, out)
	if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("INCRBY on a hash: %v, want the WRONGTYPE error", err)
	}
	if s.Stats().ReplyErrors == 0 {
		t.Error("the error reply is not counted")
	}
	srv.Kill()
	if err := s.IncrExpire(ctx, []string{"x"}, []int64{1}, []int64{60}, out); err == nil {
		t.Fatal("no error with Redis down")
	}
}

// A call waits for a slow Redis no longer than the caller's deadline when
// that comes first, else than the timeout.
func TestPlainCountersTimeouts(t *testing.T) {
	srv := redistest.Start(t, "--enable-debug-command", "yes")
	for _, c := range []struct {
		name     string
		timeout  time.Duration
		deadline time.Duration // the caller's; 0: none
	}{{"caller's deadline", 10 * time.Second, 50 * time.Millisecond}, {"the timeout", 100 * time.Millisecond, 0}} {
		s := open(t, srv.Addr, Config{Timeout: c.timeout})
		out := make([]int64, 1)
		if err := s.IncrExpire(context.Background(), []string{"k"}, []int64{1}, []int64{60}, out); err != nil {
			t.Fatal(err)
		}
		done := srv.Sleep(t, time.Second)
		ctx := context.Background()
		if c.deadline > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.deadline)
			defer cancel()
		}
		start := time.Now()
		err := s.IncrExpire(ctx, []string{"k"}, []int64{1}, []int64{60}, out)
		took := time.Since(start)
		<-done
		if err == nil || took > 700*time.Millisecond {
			t.Errorf("%s: %v after %v, want an error well before the 1s sleep ends", c.name, err, took)
		}
	}
}

// BenchmarkPlainCounters is IncrExpire and Counts on two keys against a
// real redis-server: one pipelined round trip each, its allocations
// rueidis's (the store's own command slice is pooled).
func BenchmarkPlainCounters(b *testing.B) {
	srv := redistest.Start(b)
	s := open(b, srv.Addr, Config{Timeout: 2 * time.Second})
	ctx := context.Background()
	keys, hits, ttl, out := []string{"d_k_a_60", "d_k_b_60"}, []int64{1, 1}, []int64{60, 60}, make([]int64, 2)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.IncrExpire(ctx, keys, hits, ttl, out); err != nil {
			b.Fatal(err)
		}
		if err := s.Counts(ctx, keys, ttl, out); err != nil {
			b.Fatal(err)
		}
	}
}
