package eventual

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/limit/limittest"
	"github.com/tollgate-dev/tollgate/store/redis"
)

func newNode(t *testing.T, addr string, clock func() int64) *Store {
	t.Helper()
	r, err := redis.New(context.Background(), redis.Config{Addrs: []string{addr}, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	s, err := New(Config{Redis: r, Interval: -1, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func admit(t *testing.T, s *Store, key string, p limit.Policy, n int) int {
	t.Helper()
	ok := 0
	for range n {
		d, err := s.Apply(context.Background(), key, p, 1)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			ok++
		}
	}
	return ok
}

// TestTwoNodes: two nodes decide alone between syncs (the overshoot), and
// after a sync each sees the global count the other pushed.
func TestTwoNodes(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	clock := func() int64 { return now }
	a, b := newNode(t, srv.Addr, clock), newNode(t, srv.Addr, clock)
	p := limit.FixedWindow{Limit: 10, Window: time.Minute}
	ctx := context.Background()

	if got := admit(t, a, "k", p, 6); got != 6 {
		t.Fatalf("a admitted %d of 6", got)
	}
	if err := a.Sync(ctx); err != nil { // pushes 6
		t.Fatal(err)
	}
	if err := b.Sync(ctx); err != nil { // b has nothing yet: no pull of k
		t.Fatal(err)
	}
	// b has never seen k: its view is empty, so it admits up to 10 — the
	// documented new-key overshoot.
	if got := admit(t, b, "k", p, 5); got != 5 {
		t.Fatalf("b admitted %d of 5", got)
	}
	if err := b.Sync(ctx); err != nil { // pushes 5, pulls 11
		t.Fatal(err)
	}
	if got := admit(t, b, "k", p, 3); got != 0 {
		t.Fatalf("b admitted %d after learning the global count", got)
	}
	if err := a.Sync(ctx); err != nil { // pulls 11
		t.Fatal(err)
	}
	if got := admit(t, a, "k", p, 3); got != 0 {
		t.Fatalf("a admitted %d after learning the global count", got)
	}
	now += int64(time.Minute) // next window: both admit again
	if got := admit(t, a, "k", p, 1); got != 1 {
		t.Fatal("a refused in a new window")
	}
}

// TestTokenBucketSync: a token bucket's TAT travels through Redis in ns.
func TestTokenBucketSync(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	clock := func() int64 { return now }
	a, b := newNode(t, srv.Addr, clock), newNode(t, srv.Addr, clock)
	p := limit.TokenBucket{Rate: limit.Per(10, time.Second), Burst: 5}
	ctx := context.Background()
	admit(t, b, "tb", p, 1) // b knows the key (and pulls it at its syncs)
	if got := admit(t, a, "tb", p, 5); got != 5 {
		t.Fatalf("a admitted %d of 5", got)
	}
	a.Sync(ctx)
	b.Sync(ctx)
	// Globally 6 were charged on a burst of 5: b must wait.
	d, _ := b.Apply(ctx, "tb", p, 1)
	if d.Allowed || d.RetryAfter != 200*time.Millisecond {
		t.Fatalf("b after sync: %+v", d)
	}
	now += int64(200 * time.Millisecond)
	if d, _ := b.Apply(ctx, "tb", p, 1); !d.Allowed {
		t.Fatalf("b after the refill: %+v", d)
	}
}

func TestSlidingLogRefused(t *testing.T) {
	srv := redistest.Start(t)
	s := newNode(t, srv.Addr, nil)
	_, err := s.Apply(context.Background(), "k", limit.SlidingLog{Limit: 3, Window: time.Second}, 1)
	if !errors.Is(err, limit.ErrInvalidPolicy) {
		t.Fatalf("sliding log: %v", err)
	}
}

// TestSyncFailureKeepsDeltas: a sync against a dead Redis keeps the
// deltas, and the next successful sync pushes them.
func TestSyncFailureKeepsDeltas(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	clock := func() int64 { return now }
	a, b := newNode(t, srv.Addr, clock), newNode(t, srv.Addr, clock)
	p := limit.FixedWindow{Limit: 10, Window: time.Minute}
	ctx := context.Background()
	admit(t, b, "k", p, 1)
	b.Sync(ctx)
	admit(t, a, "k", p, 4)
	srv.Kill()
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	if err := a.Sync(tctx); err == nil {
		t.Fatal("sync against a dead Redis succeeded")
	}
	cancel()
	srv.Restart(t) // an empty Redis (no persistence): b's pushed 1 is gone
	syncOK(t, a)   // a's carried 4 arrive
	syncOK(t, b)   // b pulls them
	if got := admit(t, b, "k", p, 10); got != 10-4 {
		t.Fatalf("b admitted %d, want %d", got, 10-4)
	}
}

// syncOK syncs until it succeeds: each connection broken by the restart
// fails once before the client redials.
func syncOK(t *testing.T, s *Store) {
	t.Helper()
	var err error
	for range 10 {
		if err = s.Sync(context.Background()); err == nil {
			return
		}
	}
	t.Fatalf("sync: %v", err)
}

// TestApplyAllAllOrNothing: a batch refused by one policy charges none.
func TestApplyAllAllOrNothing(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	s := newNode(t, srv.Addr, func() int64 { return now })
	ctx := context.Background()
	perSec := limit.FixedWindow{Limit: 2, Window: time.Second}
	perHour := limit.FixedWindow{Limit: 3, Window: time.Hour}
	batch := []limit.Request{{Key: "s", Policy: perSec, Cost: 1}, {Key: "h", Policy: perHour, Cost: 1}}
	for i := range 2 {
		if d, err := s.ApplyAll(ctx, batch); err != nil || !d.Allowed {
			t.Fatalf("batch %d: %+v %v", i, d, err)
		}
	}
	d, _ := s.ApplyAll(ctx, batch) // per-second refuses: per-hour must not be charged
	if d.Allowed || d.Index != 0 {
		t.Fatalf("third batch: %+v", d)
	}
	if d, _ := s.Apply(ctx, "h", perHour, 1); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("per-hour after a refused batch: %+v (charged by the refusal?)", d)
	}
	twice := []limit.Request{{Key: "t", Policy: perSec, Cost: 1}, {Key: "t", Policy: perSec, Cost: 2}}
	if d, _ := s.ApplyAll(ctx, twice); d.Allowed {
		t.Fatalf("one key charged 1+2 over a limit of 2: %+v", d)
	}
}

// TestApplyAllocs: a local decision on a known key allocates nothing.
func TestApplyAllocs(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	s := newNode(t, srv.Addr, func() int64 { return now })
	p := limit.Policy(limit.TokenBucket{Rate: limit.Per(1000, time.Second), Burst: 1000})
	ctx := context.Background()
	s.Apply(ctx, "k", p, 1)
	if n := testing.AllocsPerRun(500, func() { s.Apply(ctx, "k", p, 1) }); n != 0 {
		t.Fatalf("%v allocs per decision", n)
	}
}

// TestApplyAllAllocs: a batch of known keys allocates nothing either.
func TestApplyAllAllocs(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	s := newNode(t, srv.Addr, func() int64 { return now })
	p := limit.Policy(limit.TokenBucket{Rate: limit.Per(1000, time.Second), Burst: 1000})
	reqs := []limit.Request{{Key: "a", Policy: p, Cost: 1}, {Key: "b", Policy: p, Cost: 1}, {Key: "a", Policy: p, Cost: 1}}
	ctx := context.Background()
	s.ApplyAll(ctx, reqs)
	if n := testing.AllocsPerRun(100, func() { s.ApplyAll(ctx, reqs) }); n != 0 {
		t.Fatalf("%v allocs per batch", n)
	}
}

func BenchmarkApply(b *testing.B) {
	s := benchNode(b)
	p := limit.Policy(limit.TokenBucket{Rate: limit.Per(1_000_000, time.Second), Burst: 1000})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.Apply(ctx, "k", p, 1)
		}
	})
}

// BenchmarkApplyAll is one request under two limits on two keys, all or
// nothing: the decision of a route with a per-client and a global limit.
func BenchmarkApplyAll(b *testing.B) {
	s := benchNode(b)
	reqs := []limit.Request{
		{Key: "client", Policy: limit.TokenBucket{Rate: limit.Per(1_000_000, time.Second), Burst: 1000}, Cost: 1},
		{Key: "route", Policy: limit.FixedWindow{Limit: 1 << 40, Window: time.Minute}, Cost: 1},
	}
	ctx := context.Background()
	if d, err := s.ApplyAll(ctx, reqs); err != nil || !d.Allowed {
		b.Fatalf("ApplyAll: %+v %v", d, err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.ApplyAll(ctx, reqs)
		}
	})
}

// benchNode is a Store over a real Redis with the background sync off.
func benchNode(b *testing.B) *Store {
	srv := redistest.Start(b)
	r, err := redis.New(context.Background(), redis.Config{Addrs: []string{srv.Addr}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	s, _ := New(Config{Redis: r, Interval: -1})
	b.Cleanup(func() { s.Close() })
	return s
}

// TestPeekedKeyIsPulled: a key a node has only peeked (cost 0, as a
// counting rule's peek or a penalty's check does) is pulled at its next
// sync, so the node learns what another charged, and dropped at a later
// sync once it is idle everywhere.
func TestPeekedKeyIsPulled(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	clock := func() int64 { return now }
	a, b := newNode(t, srv.Addr, clock), newNode(t, srv.Addr, clock)
	p := limit.TokenBucket{Rate: limit.Rate{Count: 1, Period: time.Hour}, Burst: 1} // a penalty
	ctx := context.Background()
	if got := admit(t, a, "pen", p, 1); got != 1 {
		t.Fatal("a could not start it")
	}
	if err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if d, _ := b.Apply(ctx, "pen", p, 0); d.Remaining != 1 {
		t.Fatalf("b's first peek, before a sync: %+v (want the empty view)", d)
	}
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if d, _ := b.Apply(ctx, "pen", p, 0); d.Remaining != 0 || d.NextUnitAfter != time.Hour {
		t.Fatalf("b's peek after its sync: %+v, want the running penalty", d)
	}
	now += int64(time.Hour)
	for range 2 {
		if err := b.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := b.Len(); n != 0 {
		t.Fatalf("%d keys kept once idle everywhere", n)
	}
}
