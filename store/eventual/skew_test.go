package eventual

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/limit/limittest"
	"github.com/tollgate-dev/tollgate/store/redis"
)

// skewRun sends one key 100 requests a second per node for 10 s through
// nodes whose clocks read Redis's plus skews[i], each syncing every 100 ms,
// and returns how many were admitted in all and how many one decider on
// Redis's clock admits of the same requests. Time is simulated: Redis's
// scripts read the clock the run advances, not the server's TIME.
func skewRun(t *testing.T, addr string, p limit.Stateful, skews ...time.Duration) (admitted, ideal int) {
	t.Helper()
	now := limittest.Base // Redis's clock
	r, err := redis.New(context.Background(), redis.Config{Addrs: []string{addr}, Clock: func() int64 { return now }, Timeout: 5 * time.Second,
		Prefix: fmt.Sprintf("%T%v:", p, skews)}) // a key of its own
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	nodes := make([]*Store, len(skews))
	for i, skew := range skews {
		s, err := New(Config{Redis: r, Interval: -1, Clock: func() int64 { return now + int64(skew) }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		nodes[i] = s
	}
	ctx := context.Background()
	var st limit.State
	const step = 10 * time.Millisecond
	for i := range 1000 {
		if i > 0 && i%10 == 0 {
			for _, s := range nodes {
				if err := s.Sync(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, s := range nodes {
			d, err := s.Apply(ctx, "k", p, 1)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed {
				admitted++
			}
			var id limit.Decision
			if st, id = decideIdeal(p, st, now); id.Allowed {
				ideal++
			}
		}
		now += int64(step)
	}
	return admitted, ideal
}

func decideIdeal(p limit.Stateful, st limit.State, now int64) (limit.State, limit.Decision) {
	nst, d := p.Decide(st, now, 1)
	if d.Allowed {
		return nst, d
	}
	return st, d
}

// TestSkewedClocks: nodes whose clocks are up to 30 s ahead of Redis's or
// behind it admit what nodes on Redis's clock admit, within the overshoot
// bound the package documents: they decide in Redis's time. (On their own
// clocks, a fixed window of 20 per 5 s admitted 964 of 1,000 requests at
// +30 s, and a node behind Redis never saw its window reopen.)
func TestSkewedClocks(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	policies := []limit.Stateful{
		limit.FixedWindow{Limit: 20, Window: 5 * time.Second},
		limit.TokenBucket{Rate: limit.Per(4, time.Second), Burst: 20},
		limit.SlidingWindow{Limit: 20, Window: 5 * time.Second},
		limit.LeakyBucket{Rate: limit.Per(4, time.Second), Burst: 20},
	}
	const s = time.Second
	for _, p := range policies {
		// One node: its own admissions are in its view, so it admits
		// exactly what one decider on Redis's clock would.
		for _, skew := range []time.Duration{-30 * s, -2 * s, -200 * time.Millisecond, 0, 200 * time.Millisecond, 2 * s, 30 * s} {
			if got, ideal := skewRun(t, srv.Addr, p, skew); got != ideal {
				t.Errorf("%T, one node at %v: admitted %d, want %d", p, skew, got, ideal)
			}
		}
		// Two nodes, at -30 s and +30 s: each sees the other's admissions
		// up to two intervals late, the documented overshoot of
		// 2 × nodes × (requests per node per second) × interval, here
		// 2 × 2 × 100 × 0.1 s = 40, once for each of the 10 s / 5 s
		// windows or bucket depths the run spans.
		got, ideal := skewRun(t, srv.Addr, p, -30*s, 30*s)
		unskewed, _ := skewRun(t, srv.Addr, p, 0, 0)
		t.Logf("%T: two nodes at ∓30 s admitted %d, on Redis's clock %d, one decider %d", p, got, unskewed, ideal)
		if bound := ideal + 2*40; got < ideal || got > bound {
			t.Errorf("%T, two nodes at -30 s and +30 s: admitted %d, want %d to %d (on Redis's clock: %d)", p, got, ideal, bound, unskewed)
		}
	}
}

// TestSkewAgainstServerTime: against Redis's own TIME (no injected clock
// in Redis), a node 30 s ahead does not see a drained bucket refilled, and
// a node 30 s behind does not tell a client to wait 30 s longer.
func TestSkewAgainstServerTime(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	r, err := redis.New(context.Background(), redis.Config{Addrs: []string{srv.Addr}, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	p := limit.TokenBucket{Rate: limit.Per(1, time.Second), Burst: 20}
	ctx := context.Background()
	for _, skew := range []time.Duration{-30 * time.Second, 30 * time.Second} {
		s, err := New(Config{Redis: r, Interval: -1, Clock: func() int64 { return time.Now().UnixNano() + int64(skew) }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		key := fmt.Sprint("server-time", skew)
		if err := s.Sync(ctx); err != nil { // nothing to push: measures the skew all the same
			t.Fatal(err)
		}
		// A loaded machine may take a second or two here: a token a second.
		if got := admit(t, s, key, p, 25); got < 20 || got > 22 {
			t.Fatalf("%v: admitted %d of 25 on a burst of 20", skew, got)
		}
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		d, err := s.Apply(ctx, key, p, 1)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed || d.RetryAfter > 2*time.Second {
			t.Errorf("%v: after the sync, a drained bucket at a token a second says %+v, want a refusal for at most 1s", skew, d)
		}
	}
}

// TestSkewEstimate: the offset is the middle of the range every applied
// charge allows; failed charges say nothing.
func TestSkewEstimate(t *testing.T) {
	const base = int64(1_000_000)
	for _, c := range []struct {
		name    string
		charges []redis.Charge
		t0, t1  int64
		want    int64
		ok      bool
	}{
		{"none", nil, base, base + 10, 0, false},
		{"failed only", []redis.Charge{{Now: base + 5, Err: redis.ErrSlidingLog}}, base, base + 10, 0, false},
		{"one", []redis.Charge{{Now: base + 30_000}}, base, base + 10, 30_000 - 5, true},
		// applied at 30,002 and 30,008 after t0: the offset is 29,998 to 30,002
		{"two", []redis.Charge{{Now: base + 30_002}, {Now: base + 30_008}, {Now: base, Err: redis.ErrSlidingLog}}, base, base + 10, 30_000, true},
		{"behind", []redis.Charge{{Now: base - 30_000}}, base, base, -30_000, true},
	} {
		if got, ok := skew(c.charges, c.t0, c.t1); got != c.want || ok != c.ok {
			t.Errorf("%s: skew %d %v, want %d %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
