package redis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/limit/limittest"
)

// open returns a store on addr. Unless cfg says otherwise, its timeout is
// long: on a loaded machine a 50ms timeout would now and then answer by the
// failure mode, which tests comparing decisions must not see.
func open(t testing.TB, addr string, cfg Config) *Store {
	t.Helper()
	cfg.Addrs = []string{addr}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the shared vectors with the clock injected.
func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	n := 0
	limittest.Run(t, func(t *testing.T, clock func() int64) limit.Store {
		n++
		// A fresh prefix per case: the cases reuse key names.
		return open(t, srv.Addr, Config{Clock: clock, Prefix: "case" + strings.Repeat("x", n) + ":", CacheSize: -1})
	}, limittest.Options{Resolution: time.Microsecond})
}

// TestConformanceCached runs the vectors again with the over-limit cache
// on: a cached refusal must be the refusal Redis would have given.
func TestConformanceCached(t *testing.T) {
	srv := redistest.Start(t)
	n := 0
	limittest.Run(t, func(t *testing.T, clock func() int64) limit.Store {
		n++
		return open(t, srv.Addr, Config{Clock: clock, Prefix: "cached" + strings.Repeat("x", n) + ":"})
	}, limittest.Options{Resolution: time.Microsecond})
}

// policies are µs-aligned policies of every algorithm, small enough that
// random traffic crosses their limits.
var policies = []limit.Policy{
	limit.FixedWindow{Limit: 5, Window: 100 * time.Millisecond},
	limit.SlidingLog{Limit: 4, Window: 70 * time.Millisecond},
	limit.SlidingWindow{Limit: 6, Window: 90 * time.Millisecond},
	limit.SlidingWindow{Limit: 1000, Window: time.Hour},
	limit.TokenBucket{Rate: limit.Per(10, time.Second), Burst: 3},
	limit.TokenBucket{Rate: limit.Per(9, 90*time.Millisecond)},
	limit.LeakyBucket{Rate: limit.Per(20, time.Second), Burst: 3, Mode: limit.Shape, Delay: 1},
	limit.LeakyBucket{Rate: limit.Per(20, time.Second), Burst: 2, Mode: limit.Police},
}

// reference is the pure Go algorithm with its state.
type reference struct {
	p   limit.Policy
	st  limit.State
	log limit.Log
}

func (r *reference) decide(now, cost int64) limit.Decision {
	if p, ok := r.p.(limit.Stateful); ok {
		var d limit.Decision
		r.st, d = p.Decide(r.st, now, cost)
		return d
	}
	return r.p.(limit.Logged).DecideLog(&r.log, now, cost)
}

// same compares decisions at the store's 1µs resolution: where the Go
// algorithm answers "from the next nanosecond", the scripts answer "from the
// next microsecond", so durations are rounded up to whole microseconds.
func same(a, b limit.Decision) bool {
	a.Policy, b.Policy = nil, nil
	for _, d := range []*limit.Decision{&a, &b} {
		d.RetryAfter, d.ResetAfter, d.Delay = roundUp(d.RetryAfter), roundUp(d.ResetAfter), roundUp(d.Delay)
		d.NextUnitAfter = roundUp(d.NextUnitAfter)
		d.IdleAt = int64(roundUp(time.Duration(d.IdleAt)))
	}
	return a == b
}

func roundUp(d time.Duration) time.Duration {
	if d == limit.Never || d%time.Microsecond == 0 {
		return d
	}
	return (d/time.Microsecond + 1) * time.Microsecond
}

// TestRandomAgainstGo drives random µs-aligned traffic, including clock
// steps backwards and costs above the limit, through the Redis store with
// an injected clock and through the pure algorithms, and compares every
// decision field by field.
func TestRandomAgainstGo(t *testing.T) {
	srv := redistest.Start(t)
	var now int64 = limittest.Base
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }, CacheSize: -1})
	rng := rand.New(rand.NewPCG(1, 2))
	for pi, p := range policies {
		ref := &reference{p: p}
		key := "rnd" + string(rune('a'+pi))
		for step := range 400 {
			switch r := rng.IntN(20); {
			case r == 0:
				now -= int64(rng.IntN(5000)) * 1000 // back up to 5ms
			case r < 4:
				now += int64(rng.IntN(200_000)) * 1000
			default:
				now += int64(rng.IntN(20_000)) * 1000
			}
			cost := int64(rng.IntN(3))
			if rng.IntN(30) == 0 {
				cost = int64(rng.IntN(10))
			}
			got, err := s.Apply(context.Background(), key, p, cost)
			if err != nil {
				t.Fatal(err)
			}
			want := ref.decide(now, cost)
			if !same(got, want) {
				t.Fatalf("%v step %d (now %d, cost %d):\n got  %+v\n want %+v", p, step, now, cost, got, want)
			}
		}
	}
}

// TestTruncatedInterval checks the documented behaviour for an emission
// interval that is not a whole number of microseconds (90ms/7 =
// 12857142ns): the store computes the policy whose interval is truncated to
// 12857µs.
func TestTruncatedInterval(t *testing.T) {
	srv := redistest.Start(t)
	var now int64 = limittest.Base
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }, CacheSize: -1})
	p := limit.TokenBucket{Rate: limit.Per(7, 90*time.Millisecond)}
	ref := &reference{p: limit.TokenBucket{Rate: limit.Per(1, 12857*time.Microsecond), Burst: 7}}
	rng := rand.New(rand.NewPCG(3, 4))
	for step := range 200 {
		now += int64(rng.IntN(20_000)) * 1000
		cost := int64(rng.IntN(3))
		got, err := s.Apply(context.Background(), "trunc", p, cost)
		if err != nil {
			t.Fatal(err)
		}
		if want := ref.decide(now, cost); !same(got, want) {
			t.Fatalf("step %d:\n got  %+v\n want %+v", step, got, want)
		}
	}
}

// TestServerTime checks the default mode: the scripts read Redis's TIME.
// Each decision's server instant is replayed through the pure algorithm.
func TestServerTime(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv.Addr, Config{CacheSize: -1})
	var last int64
	s.onNow = func(us int64) { last = us * 1000 }
	for _, p := range policies {
		ref := &reference{p: p}
		for step := range 30 {
			got, err := s.Apply(context.Background(), "time:"+p.String(), p, 1)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(time.Unix(0, last)); d < -time.Second || d > time.Second {
				t.Fatalf("server time %v is %v away from the local clock", time.Unix(0, last), d)
			}
			want := ref.decide(last, 1)
			if !same(got, want) {
				t.Fatalf("%v step %d:\n got  %+v\n want %+v", p, step, got, want)
			}
		}
	}
}

// TestTTLIsIdleInstant checks, for every algorithm, that a key lives
// exactly until its state's idle instant (rounded up to the millisecond):
// PTTL right after a decision is its ResetAfter, less the time since. The
// time since is measured, from before the decision to redis-cli's answer:
// on a loaded machine starting redis-cli took more than a fixed 100 ms
// allowance (PTTL 6878 of 7000).
func TestTTLIsIdleInstant(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv.Addr, Config{CacheSize: -1})
	// Idle instants seconds away, not the milliseconds of policies: the
	// key must still be there when redis-cli, a new process, asks for its
	// PTTL on a loaded machine (a 100 ms window had expired: PTTL -2; so
	// had a bucket's one token of 1 s, redis-cli starting in over a second).
	long := []limit.Policy{
		limit.FixedWindow{Limit: 5, Window: 10 * time.Second},
		limit.SlidingLog{Limit: 4, Window: 7 * time.Second},
		limit.SlidingWindow{Limit: 6, Window: 9 * time.Second},
		limit.SlidingWindow{Limit: 1000, Window: time.Hour},
		limit.TokenBucket{Rate: limit.Per(10, 100*time.Second), Burst: 3},
		limit.TokenBucket{Rate: limit.Per(9, 81*time.Second)},
		limit.LeakyBucket{Rate: limit.Per(2, 10*time.Second), Burst: 3, Mode: limit.Shape, Delay: 1},
		limit.LeakyBucket{Rate: limit.Per(2, 10*time.Second), Burst: 2, Mode: limit.Police},
		limit.TokenBucket{Rate: limit.Per(1, time.Minute), Burst: 10},
	}
	for i, p := range long {
		key := fmt.Sprintf("ttl%d", i)
		start := time.Now()
		d, err := s.Apply(context.Background(), key, p, 1)
		if err != nil || !d.Allowed {
			t.Fatalf("%v: %+v %v", p, d, err)
		}
		out := srv.CLI(t, "pttl", "tollgate:{"+key+"}")
		// The expiry was set and PTTL read at two server instants, each
		// truncated to the millisecond, both within the time measured.
		since := (time.Since(start) + time.Millisecond - 1).Milliseconds() + 1
		want := (d.ResetAfter + time.Millisecond - 1).Milliseconds()
		if out == "-2" { // no such key: right only if its idle instant has passed
			if since < want {
				t.Errorf("%v: the key is gone %d ms after the decision, want it for %d (ResetAfter %v)", p, since, want, d.ResetAfter)
			}
			continue
		}
		if got := atoi(t, out); got > want || got < want-since {
			t.Errorf("%v: PTTL %d ms, want %d less at most the %d ms since (ResetAfter %v)", p, got, want, since, d.ResetAfter)
		}
	}
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("not a number: %q", s)
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

// TestNoScript flushes the script cache between decisions: the store must
// re-send the script (NOSCRIPT) and keep the state.
func TestNoScript(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv.Addr, Config{CacheSize: -1})
	p := limit.FixedWindow{Limit: 3, Window: time.Hour}
	for i := range 5 {
		srv.CLI(t, "script", "flush")
		d, err := s.Apply(context.Background(), "noscript", p, 1)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != (i < 3) {
			t.Fatalf("request %d: allowed %v", i, d.Allowed)
		}
	}
}

func TestOutOfRange(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv.Addr, Config{})
	for _, p := range []limit.Policy{
		limit.SlidingWindow{Limit: 1 << 51, Window: time.Hour},
		limit.FixedWindow{Limit: 5, Window: 500 * time.Nanosecond},
		limit.TokenBucket{Rate: limit.Per(3, time.Microsecond)},
		limit.TokenBucket{Rate: limit.Per(1, 24*time.Hour), Burst: 1 << 20},
	} {
		if _, err := s.Apply(context.Background(), "k", p, 1); !errors.Is(err, limit.ErrInvalidPolicy) {
			t.Errorf("%v: %v, want ErrInvalidPolicy", p, err)
		}
	}
	for _, p := range []limit.Policy{
		limit.SlidingWindow{Limit: 1_000_000, Window: 24 * time.Hour},
		limit.FixedWindow{Limit: 1_000_000_000, Window: 30 * 24 * time.Hour},
	} {
		if _, err := s.Apply(context.Background(), "k"+p.String(), p, 1); err != nil {
			t.Errorf("%v: %v", p, err)
		}
	}
}

// TestLargeWindowsAgainstGo: daily and monthly quotas whose count × window
// in µs is far beyond 2^53 (the sliding window's limb arithmetic), with
// costs of every size, against the pure algorithms.
func TestLargeWindowsAgainstGo(t *testing.T) {
	srv := redistest.Start(t)
	var now int64 = limittest.Base
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }, CacheSize: -1})
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		p    limit.Policy
		cost int64
		step time.Duration
	}{
		{limit.SlidingWindow{Limit: 1_000_000, Window: 24 * time.Hour}, 60_000, 30 * time.Minute},
		{limit.SlidingWindow{Limit: 999_999_999_937, Window: 30 * 24 * time.Hour}, 90_000_000_000, 36 * time.Hour},
		{limit.SlidingWindow{Limit: 1 << 49, Window: 365 * 24 * time.Hour}, 1 << 45, 9 * 24 * time.Hour},
		{limit.FixedWindow{Limit: 1_000_000, Window: 24 * time.Hour}, 60_000, 30 * time.Minute},
	} {
		ref := &reference{p: c.p}
		refused := 0
		for step := range 300 {
			now += int64(rng.Int64N(int64(c.step)/1000)) * 1000
			cost := rng.Int64N(c.cost)
			got, err := s.Apply(context.Background(), "large:"+c.p.String(), c.p, cost)
			if err != nil {
				t.Fatal(err)
			}
			if want := ref.decide(now, cost); !same(got, want) {
				t.Fatalf("%v step %d (cost %d):\n got  %+v\n want %+v", c.p, step, cost, got, want)
			}
			if !got.Allowed {
				refused++
			}
		}
		if refused < 30 || refused > 270 {
			t.Errorf("%v: %d of 300 refused; the traffic should cross the limit often", c.p, refused)
		}
	}
}
