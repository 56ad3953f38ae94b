package redis

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/limit/limittest"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// eachAgainstMemory drives random batches of one to five requests (every
// algorithm, sometimes one key twice in a batch, costs 0 to 2) through
// rs.ApplyEach and one memory-store Apply after another, and compares
// every decision.
func eachAgainstMemory(t *testing.T, rs *Store, now *int64, steps int) {
	t.Helper()
	ms, err := memory.New(memory.Config{Clock: func() int64 { return *now }, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	rng := rand.New(rand.NewPCG(7, 8))
	ctx := context.Background()
	keys := []string{"a", "b", "c", "d", "e", "f"}
	refused, allowed := 0, 0
	out := make([]limit.Decision, 5)
	for step := range steps {
		*now += int64(rng.IntN(6_000)) * 1000
		reqs := make([]limit.Request, 1+rng.IntN(5))
		for i := range reqs {
			pi := rng.IntN(len(policies))
			// A key belongs to one policy: name it after both.
			reqs[i] = limit.Request{Key: keys[rng.IntN(len(keys))] + "/" + strconv.Itoa(pi), Policy: policies[pi], Cost: int64(rng.IntN(3))}
		}
		if err := rs.ApplyEach(ctx, reqs, out); err != nil {
			t.Fatal(err)
		}
		for i, r := range reqs {
			want, err := ms.Apply(ctx, r.Key, r.Policy, r.Cost)
			if err != nil {
				t.Fatal(err)
			}
			if got := out[i]; !same(got, want) || got.Policy != r.Policy {
				t.Fatalf("step %d request %d of %v:\n got  %+v\n want %+v", step, i, reqs, got, want)
			}
			if want.Allowed {
				allowed++
			} else {
				refused++
			}
		}
	}
	if refused < steps/10 || allowed < steps/10 {
		t.Fatalf("%d allowed, %d refused: the traffic does not exercise both outcomes", allowed, refused)
	}
}

// TestApplyEachAgainstMemory: ApplyEach decides each request exactly as
// one Apply after another, the over-limit cache on and off.
func TestApplyEachAgainstMemory(t *testing.T) {
	for _, cache := range []int{-1, 0} {
		t.Run("cache="+strconv.Itoa(cache), func(t *testing.T) {
			srv := redistest.Start(t)
			now := limittest.Base
			rs := open(t, srv.Addr, Config{Clock: func() int64 { return now }, CacheSize: cache})
			eachAgainstMemory(t, rs, &now, 1500)
		})
	}
}

// TestApplyEachOnACluster: on a cluster, whose keys live on several
// nodes, ApplyEach pipelines one script call per request and decides as
// the memory store does.
func TestApplyEachOnACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := redistest.StartCluster(t)
	now := limittest.Base
	rs, err := New(context.Background(), Config{Addrs: c.Addrs()[:1], Clock: func() int64 { return now }, CacheSize: -1, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	if !rs.conn.Load().cluster {
		t.Fatal("client did not detect cluster mode")
	}
	eachAgainstMemory(t, rs, &now, 300)
}

// TestApplyEachAfterScriptFlush: a Redis that forgot the scripts (a
// restart, SCRIPT FLUSH) is sent the script again, and decides.
func TestApplyEachAfterScriptFlush(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv.Addr, Config{CacheSize: -1, OnFailure: failmode.Closed})
	p := limit.FixedWindow{Limit: 2, Window: time.Hour}
	reqs := []limit.Request{{Key: "x", Policy: p, Cost: 1}, {Key: "y", Policy: p, Cost: 1}}
	out := make([]limit.Decision, 2)
	ctx := context.Background()
	for i := range 3 {
		srv.CLI(t, "SCRIPT", "FLUSH")
		if err := s.ApplyEach(ctx, reqs, out); err != nil {
			t.Fatal(err)
		}
		for j, d := range out {
			if d.Allowed != (i < 2) || d.Remaining != int64(max(1-i, 0)) {
				t.Fatalf("batch %d request %d after SCRIPT FLUSH: %+v", i, j, d)
			}
		}
	}
	if st := s.Stats(); st.Failures != 0 || st.ReplyErrors != 0 || st.Decisions != 6 {
		t.Fatalf("stats: %+v", st)
	}
}

// TestApplyEachFollowsTheFailureMode: a batch that Redis cannot decide
// (down, or a key holding something else) is answered by the failure
// mode, request by request, and counts as one failure of the breaker.
func TestApplyEachFollowsTheFailureMode(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv.Addr, Config{CacheSize: -1, BreakerFailures: 2, Timeout: 200 * time.Millisecond})
	p := limit.TokenBucket{Rate: limit.Per(10, time.Hour), Burst: 10}
	ctx := context.Background()
	srv.CLI(t, "SET", "tollgate:{bad}", "garbage")
	reqs := []limit.Request{{Key: "ok", Policy: p, Cost: 1}, {Key: "bad", Policy: p, Cost: 1}, {Key: "ok2", Policy: p, Cost: 1}}
	out := make([]limit.Decision, 3)
	if err := s.WithFailure(failmode.Closed).(limit.EachApplier).ApplyEach(ctx, reqs, out); err != nil {
		t.Fatal(err)
	}
	for i, d := range out {
		if d.Allowed {
			t.Fatalf("closed, a batch with a wrong-type key: request %d allowed: %+v", i, d)
		}
	}
	if st := s.Stats(); st.ReplyErrors != 1 || st.FailClosed != 3 || st.BreakerTrips != 0 {
		t.Fatalf("stats after the error reply: %+v", st)
	}
	srv.Kill()
	if err := s.WithFailure(failmode.Open).(limit.EachApplier).ApplyEach(ctx, reqs, out); err != nil {
		t.Fatal(err)
	}
	for i, d := range out {
		if !d.Allowed || d.Limit != 10 {
			t.Fatalf("open, Redis down: request %d: %+v", i, d)
		}
	}
	if st := s.Stats(); st.Failures != 1 || st.FailOpen != 3 || st.BreakerOpen {
		t.Fatalf("stats after one failed batch: %+v", st)
	}
}

// TestApplyEachRefusesBadInput: a negative cost or an out slice too
// short is an error, before anything is charged.
func TestApplyEachRefusesBadInput(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv.Addr, Config{CacheSize: -1})
	p := limit.FixedWindow{Limit: 1, Window: time.Hour}
	ctx := context.Background()
	if err := s.ApplyEach(ctx, []limit.Request{{Key: "a", Policy: p, Cost: 1}, {Key: "b", Policy: p, Cost: -1}}, make([]limit.Decision, 2)); err != limit.ErrNegativeCost {
		t.Fatalf("negative cost: %v", err)
	}
	if err := s.ApplyEach(ctx, []limit.Request{{Key: "a", Policy: p, Cost: 1}, {Key: "b", Policy: p, Cost: 1}}, make([]limit.Decision, 1)); err == nil {
		t.Fatal("short out: no error")
	}
	if d, err := s.Apply(ctx, "a", p, 1); err != nil || !d.Allowed {
		t.Fatalf("a was charged by the refused batches: %+v, %v", d, err)
	}
}
