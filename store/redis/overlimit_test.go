package redis

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
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

// TestRedisSlow stalls the server: each request must be answered by its
// failure mode after about the timeout, not after the stall, also once the
// client has dropped its connection for the stall and reconnects. The
// stall is a paused server (SIGSTOP) that lasts until the test resumes it,
// not a DEBUG SLEEP of fixed length that a loaded machine's slow redis-cli
// and slow requests could outlast; the bound on an answer is measured on
// this machine (stallBound), and time spent waiting for a CPU is not
// counted (working).
func TestRedisSlow(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv.Addr, Config{Timeout: 20 * time.Millisecond, BreakerFailures: 1000, CacheSize: -1})
	p := limit.FixedWindow{Limit: 100, Window: time.Hour}
	ctx := context.Background()
	bound := stallBound(t, s, p)
	srv.Pause(t)
	var slowest time.Duration
	defer func() { t.Logf("slowest answer while stalled: %v", slowest) }()
	check := func(when string) {
		t.Helper()
		for _, m := range []failmode.Mode{failmode.Closed, failmode.Open, failmode.Closed, failmode.Open} {
			var d limit.Decision
			var err error
			el := working(func() { d, err = s.WithFailure(m).Apply(ctx, "slow", p, 1) })
			slowest = max(slowest, el)
			if err != nil || d.Allowed != (m == failmode.Open) {
				t.Fatalf("%s, %v: %+v %v", when, m, d, err)
			}
			if el > bound {
				t.Fatalf("%s, %v answered after %v (not counting waits for a CPU); want about the 20ms timeout (bound %v)", when, m, el, bound)
			}
		}
	}
	check("stalled")
	// A command with no deadline of its own waits for the client's
	// connection timeout, then the client drops the connection.
	c := s.conn.Load().client
	if err := c.Do(ctx, c.B().Ping().Build()).Error(); err == nil {
		t.Fatal("PING answered by a stalled server")
	}
	check("stalled, reconnecting")
	if st := s.Stats(); st.Timeouts == 0 {
		t.Fatalf("no timeout counted: %+v", st)
	}
	srv.Resume(t)
	waitFor(t, func() bool { // Redis decides again
		before := s.Stats().Decisions
		s.Apply(ctx, "slow", p, 1)
		return s.Stats().Decisions == before+1
	})
}

// stallBound is how long a decision may take, less the time the process
// waited for a CPU (working), to be answered by its failure mode while
// Redis is stalled: the timeout (with its slice), plus twenty times the
// slowest of 20 decisions just made on the healthy server (the machine's
// speed, -race included), and at least 250ms. It is at most 900ms: a
// decision that waits for the stall instead takes a second or more
// (the client's escape timer; a paused server answers nothing before
// Resume), idle, and a machine slow enough to need more could not tell
// the two apart. On a 2-core machine at load 15 to 20 a decision that
// reconnected took up to 1.27s of wall time, its goroutine runnable all
// along (allocating the new connection's buffers): waiting for a CPU,
// not for Redis. It first waits for the store to decide on Redis
// (connected, scripts loaded).
func stallBound(t *testing.T, s *Store, p limit.Policy) time.Duration {
	t.Helper()
	ctx := context.Background()
	decided := func() bool {
		before := s.Stats().Decisions
		s.Apply(ctx, "calibrate", p, 0)
		return s.Stats().Decisions == before+1
	}
	waitFor(t, decided)
	var slowest time.Duration
	for range 20 {
		slowest = max(slowest, working(func() { s.Apply(ctx, "calibrate", p, 0) }))
	}
	b := min(s.cfg.Timeout*11/10+max(250*time.Millisecond, 20*slowest), 900*time.Millisecond)
	t.Logf("slowest of 20 healthy decisions %v: a stalled decision's bound %v", slowest, b)
	return b
}

// working runs f and returns how long it took, less the time this
// process's threads spent runnable and waiting for a CPU meanwhile
// (Linux's schedstat, summed over the threads): on a machine shared with
// other loads, the time f could have run.
func working(f func()) time.Duration {
	w0 := cpuWait()
	start := time.Now()
	f()
	el := time.Since(start)
	return max(el-max(cpuWait()-w0, 0), 0)
}

// cpuWait sums /proc/self/task/*/schedstat's second field: the time each
// thread of the process has been runnable but not running.
func cpuWait() time.Duration {
	ents, _ := os.ReadDir("/proc/self/task")
	var sum int64
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited
		}
		if f := strings.Fields(string(b)); len(f) >= 2 {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			sum += n
		}
	}
	return time.Duration(sum)
}

// cacheStep is one request of a cache test, at Base+at, with the decision
// package limit gives for it.
type cacheStep struct {
	at   time.Duration
	cost int64
}

// checkAgainstGo applies the steps to key under p through s and through
// the pure algorithm, and compares every field of every decision.
func checkAgainstGo(t *testing.T, s *Store, now *int64, key string, p limit.Policy, steps []cacheStep) {
	t.Helper()
	ref := &reference{p: p}
	for i, st := range steps {
		*now = limittest.Base + int64(st.at)
		got, err := s.Apply(context.Background(), key, p, st.cost)
		if err != nil {
			t.Fatal(err)
		}
		if want := ref.decide(*now, st.cost); !same(got, want) {
			t.Errorf("step %d (at %v, cost %d):\n got  %+v\n want %+v", i, st.at, st.cost, got, want)
		}
	}
}

// TestOverLimitCacheForgetsARefusalOnceTheKeyAdmits is redis-cell's
// CL.THROTTLE k 3 10 1 (a token bucket of 10/s, burst 4): a refusal of
// cost 3 is cached, then a request of cost 2 is admitted; the next cost 3
// must be told the figures of the key as it is now (nothing left, 250ms to
// wait), not those of the refusal before the admission.
func TestOverLimitCacheForgetsARefusalOnceTheKeyAdmits(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }})
	ms := time.Millisecond
	checkAgainstGo(t, s, &now, "k", limit.TokenBucket{Rate: limit.Per(10, time.Second), Burst: 4}, []cacheStep{
		{0, 4}, {200 * ms, 3}, {200 * ms, 2}, {250 * ms, 3}, {260 * ms, 3},
	})
}

// TestOverLimitCacheNeverAnswersALargerCost: a refusal of cost 1 (50ms to
// wait) says nothing of what a cost of 2 must wait (100ms).
func TestOverLimitCacheNeverAnswersALargerCost(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }})
	ms := time.Millisecond
	checkAgainstGo(t, s, &now, "k", limit.TokenBucket{Rate: limit.Per(5, 250*ms), Burst: 4}, []cacheStep{
		{0, 4}, {0, 1}, {0, 2}, {10 * ms, 2}, {10 * ms, 1}, {20 * ms, 3},
	})
	// The windows too: a cost-2 refusal with one left, then cost 3.
	checkAgainstGo(t, s, &now, "w", limit.SlidingWindow{Limit: 4, Window: time.Second}, []cacheStep{
		{0, 3}, {100 * ms, 2}, {200 * ms, 3}, {1100 * ms, 3}, {1200 * ms, 2},
	})
}

// TestOverLimitCacheReportsFiguresOfNow: a cached refusal reports what
// Redis would say at the instant of the request, not at the refusal: a
// bucket refusing cost 3 with nothing left gains tokens while it stays
// refused.
func TestOverLimitCacheReportsFiguresOfNow(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }})
	ms := time.Millisecond
	checkAgainstGo(t, s, &now, "k", limit.TokenBucket{Rate: limit.Per(10, time.Second), Burst: 4}, []cacheStep{
		{0, 4}, {0, 3}, {50 * ms, 3}, {150 * ms, 3}, {250 * ms, 3}, {299 * ms, 3}, {300 * ms, 3},
	})
	checkAgainstGo(t, s, &now, "l", limit.LeakyBucket{Rate: limit.Per(10, time.Second), Burst: 3, Mode: limit.Police}, []cacheStep{
		{0, 4}, {0, 3}, {50 * ms, 3}, {150 * ms, 3}, {250 * ms, 3}, {300 * ms, 3},
	})
}

// TestOverLimitCacheApplyAllReportsTheMostRestrictive: a refusal cached for
// one request of a batch does not answer the batch when another request
// would refuse for longer: the batch reports the most restrictive policy.
func TestOverLimitCacheApplyAllReportsTheMostRestrictive(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }})
	ctx := context.Background()
	fw := limit.FixedWindow{Limit: 1, Window: time.Second}
	tb := limit.TokenBucket{Rate: limit.Per(1, 10*time.Second), Burst: 1}
	s.Apply(ctx, "a", fw, 1)
	if d, _ := s.Apply(ctx, "a", fw, 1); d.Allowed || d.RetryAfter != time.Second {
		t.Fatalf("a: %+v", d)
	}
	s.Apply(ctx, "b", tb, 1)
	d, err := s.ApplyAll(ctx, []limit.Request{{Key: "a", Policy: fw, Cost: 1}, {Key: "b", Policy: tb, Cost: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed || d.Index != 1 || d.RetryAfter != 10*time.Second {
		t.Fatalf("batch: %+v; want refused by b (index 1) for 10s", d)
	}
	// Both refusals are cached now: the batch is answered locally, the
	// same way.
	hits := s.Stats().CacheHits
	now += int64(time.Millisecond)
	d, err = s.ApplyAll(ctx, []limit.Request{{Key: "a", Policy: fw, Cost: 1}, {Key: "b", Policy: tb, Cost: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed || d.Index != 1 || d.RetryAfter != 10*time.Second-time.Millisecond || s.Stats().CacheHits != hits+1 {
		t.Fatalf("batch again: %+v, %d hits (was %d)", d, s.Stats().CacheHits, hits)
	}
}

// TestOverLimitCacheForgetsARefusalOnceSyncCharges: a charge pushed by
// Sync (admissions made elsewhere) changes the key as an admission does: a
// refusal cached before it no longer tells the wait.
func TestOverLimitCacheForgetsARefusalOnceSyncCharges(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }})
	ctx := context.Background()
	p := limit.TokenBucket{Rate: limit.Per(10, time.Second), Burst: 2}
	s.Apply(ctx, "k", p, 2)
	if d, _ := s.Apply(ctx, "k", p, 1); d.Allowed || d.RetryAfter != 100*time.Millisecond {
		t.Fatalf("refusal: %+v", d)
	}
	if err := s.Sync(ctx, []Charge{{Key: "k", Policy: p, Cost: 3}}); err != nil {
		t.Fatal(err)
	}
	if d, _ := s.Apply(ctx, "k", p, 1); d.Allowed || d.RetryAfter != 400*time.Millisecond {
		t.Fatalf("after a sync charged 3: %+v, want 400ms to wait", d)
	}
}

// TestOverLimitCacheIndexIsTheCallers: a refusal cached from the second
// request of a batch, answering Apply on that key alone, has Index 0.
func TestOverLimitCacheIndexIsTheCallers(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }})
	ctx := context.Background()
	fw := limit.FixedWindow{Limit: 5, Window: time.Second}
	tb := limit.TokenBucket{Rate: limit.Per(1, time.Second), Burst: 1}
	s.Apply(ctx, "b", tb, 1)
	d, _ := s.ApplyAll(ctx, []limit.Request{{Key: "a", Policy: fw, Cost: 1}, {Key: "b", Policy: tb, Cost: 1}})
	if d.Allowed || d.Index != 1 {
		t.Fatalf("batch: %+v", d)
	}
	hits := s.Stats().CacheHits
	if d, _ := s.Apply(ctx, "b", tb, 1); d.Allowed || d.Index != 0 || d.Policy != limit.Policy(tb) || s.Stats().CacheHits != hits+1 {
		t.Fatalf("Apply answered from the cache: %+v (hits %d, was %d)", d, s.Stats().CacheHits, hits)
	}
}

// TestOverLimitCacheDropsARefusalOvertakenByAnAdmission: a refusal decided
// before an admission of the same key but arriving after it (concurrent
// requests) is not remembered; admissions of other keys do not keep a
// refusal from being remembered.
func TestOverLimitCacheDropsARefusalOvertakenByAnAdmission(t *testing.T) {
	c := newOverLimit(1024)
	p := limit.TokenBucket{Rate: limit.Per(10, time.Second), Burst: 2}
	now := limittest.Base
	refusal := limit.Decision{Limit: 2, RetryAfter: 100 * time.Millisecond, ResetAfter: 200 * time.Millisecond, NextUnitAfter: 100 * time.Millisecond}
	admission := limit.Decision{Allowed: true, Limit: 2, ResetAfter: 300 * time.Millisecond, NextUnitAfter: 200 * time.Millisecond}

	_, refused, _ := c.get("k", p, 1, 2, now)  // a request that Redis will refuse sets out
	_, admitted, _ := c.get("k", p, 1, 2, now) // so does one it will admit
	c.record("k", p, 1, now, admitted, admission)
	c.record("k", p, 1, now, refused, refusal) // the refusal arrives last
	if d, _, ok := c.get("k", p, 1, 2, now); ok {
		t.Fatalf("a refusal overtaken by an admission answered: %+v", d)
	}

	_, refused, _ = c.get("k", p, 1, 2, now)
	sh, _ := c.shard("k")
	for i, n := 0, 0; n <= olRecent; i++ { // admissions of keys in k's shard
		other := fmt.Sprintf("other%d", i)
		if o, _ := c.shard(other); o == sh {
			c.record(other, p, 1, now, 0, admission)
			n++
		}
	}
	c.record("k", p, 1, now, refused, refusal)
	// Too many admissions passed to tell whether "k" was among them.
	if _, _, ok := c.get("k", p, 1, 2, now); ok {
		t.Fatal("a refusal remembered across more admissions than a shard records")
	}

	_, refused, _ = c.get("k", p, 1, 2, now)
	c.record("other", p, 1, now, 0, admission)
	c.record("k", p, 1, now, refused, refusal)
	if _, _, ok := c.get("k", p, 1, 2, now); !ok {
		t.Fatal("an admission of another key kept a refusal from being remembered")
	}
}
