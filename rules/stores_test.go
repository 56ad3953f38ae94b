package rules

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/eventual"
	"github.com/tollgate-dev/tollgate/store/gossip"
	"github.com/tollgate-dev/tollgate/store/gossip/gossipconf"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/store/redis"
)

// fleet is two gateways' stores of one tier, sharing their counts, and
// how to wait until what one charged reaches the other.
type fleet struct {
	stores [2]limit.Store
	share  func(t *testing.T, b *Engine)
}

// TestCountAndPenaltyOnEveryTier runs the login defence (3 failures
// per 5 minutes, then 10 minutes refused) on two gateways sharing a
// tier's store: Redis strict, eventual (synced with Redis) and gossip,
// and on the memory store (one gateway, the default tier), each beside
// a default rule on an in-process memory store, so that the decision
// spans two stores. Gateway A counts the failures and is refused into
// the penalty; gateway B then finds the key under it, for the time it
// has left, on the same fake clock; after it, the key is free on both.
func TestCountAndPenaltyOnEveryTier(t *testing.T) {
	for _, tier := range []string{ConsistencyDefault, ConsistencyStrict, ConsistencyEventual, ConsistencyGossip} {
		t.Run(tier, func(t *testing.T) {
			clk := newClock()
			f := tierFleet(t, tier, clk.now)
			var engines [2]*Engine
			for i := range engines {
				mem, err := memory.New(memory.Config{Clock: clk.now, SweepInterval: -1})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { mem.Close() })
				login := loginRule(3)
				login.Policies[0].Window = "5m"
				login.Penalty = 10 * time.Minute
				login.Consistency = tier
				cfg := Config{Now: clk.wall, Rules: []Rule{login, {Name: "all", Policies: []Policy{{Algorithm: "fixed_window", Limit: 1000, Window: "1m"}}}}}
				st := limit.Store(mem)
				if tier == ConsistencyDefault {
					st = f.stores[i]
				} else {
					tierStore := f.stores[i]
					cfg.Stores = func(Rule) (limit.Store, error) { return tierStore, nil }
				}
				if engines[i], err = New(cfg, st); err != nil {
					t.Fatal(err)
				}
			}
			a, b := engines[0], engines[1]
			const ip = "198.51.100.20"
			ctx := context.Background()
			for i := range 3 {
				res := decide(t, a, get("/login", ip))
				if res.Refused() {
					t.Fatalf("failure %d refused: %+v", i, res.Decision)
				}
				if err := res.Charge(ctx, 401, nil); err != nil {
					t.Fatal(err)
				}
			}
			// A user on the same gateways is never counted.
			for range 5 {
				res := decide(t, b, get("/login", "198.51.100.21"))
				if res.Refused() {
					t.Fatal("a user refused")
				}
				if err := res.Charge(ctx, 200, nil); err != nil {
					t.Fatal(err)
				}
			}
			res := decide(t, a, get("/login", ip))
			if !res.Refused() || res.Penalty() != 10*time.Minute || headers(&res)[HeaderRetryAfter] != "600" {
				t.Fatalf("fourth failure: %v, penalty %v, %v", res.Outcome, res.Penalty(), headers(&res))
			}
			f.share(t, b)
			clk.add(time.Minute)
			res = decide(t, b, get("/login", ip))
			if !res.Refused() {
				t.Fatalf("gateway B: %v %+v", res.Outcome, res.Decision)
			}
			left := res.Penalty()
			if tier == ConsistencyGossip {
				// The fleet's clock is the nodes' plus an offset the
				// others' stamps raise: within a second of exact.
				if left <= 9*time.Minute-time.Second || left > 9*time.Minute {
					t.Fatalf("gateway B: penalty %v, want about 9m", left)
				}
			} else if left != 9*time.Minute {
				t.Fatalf("gateway B: penalty %v, want 9m", left)
			}
			// "all" was charged by the admitted requests only.
			clk.add(10 * time.Minute)
			for i, e := range engines {
				res := decide(t, e, get("/login", ip))
				if res.Refused() {
					t.Fatalf("gateway %d after the penalty: %v %+v penalty %v", i, res.Outcome, res.Decision, res.Penalty())
				}
				if err := res.Charge(ctx, 204, nil); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// tierFleet builds two gateways' stores of tier on clock.
func tierFleet(t *testing.T, tier string, clock func() int64) fleet {
	t.Helper()
	switch tier {
	case ConsistencyDefault:
		st, err := memory.New(memory.Config{Clock: clock, SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return fleet{stores: [2]limit.Store{st, st}, share: func(*testing.T, *Engine) {}}
	case ConsistencyStrict, ConsistencyEventual:
		srv := redistest.Start(t)
		var f fleet
		var evs [2]*eventual.Store
		for i := range 2 {
			r, err := redis.New(context.Background(), redis.Config{Addrs: []string{srv.Addr}, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			f.stores[i] = r
			if tier == ConsistencyEventual {
				ev, err := eventual.New(eventual.Config{Redis: r, Interval: -1, Clock: clock})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ev.Close() })
				evs[i], f.stores[i] = ev, ev
			}
		}
		f.share = func(t *testing.T, b *Engine) {
			if evs[0] == nil {
				return
			}
			// A gateway's view of a key it has never seen is empty until
			// its next sync (the new-key overshoot of package eventual):
			// the attacker reaches B once (admitted, never answered),
			// then both sync.
			if err := evs[0].Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			decide(t, b, get("/login", "198.51.100.20"))
			if err := evs[1].Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		return f
	case ConsistencyGossip:
		var nodes [2]*gossip.Store
		for i := range nodes {
			var seeds []string
			if i > 0 {
				seeds = []string{nodes[0].Addr()}
			}
			s, err := gossip.New(gossip.Config{Config: gossipconf.Config{Name: fmt.Sprintf("gw%d", i), BindAddr: "127.0.0.1", Seeds: seeds, BindPort: new(0)}, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			nodes[i] = s
		}
		for _, s := range nodes {
			select {
			case <-s.Ready():
			case <-time.After(20 * time.Second):
				t.Fatal("gossip: a node never warmed up")
			}
		}
		// The penalty key, as the engine names it.
		pen := "login" + keySep + "login" + keySep + "fixed_window=5m0s" + keySep + penaltyMarker + "198.51.100.20"
		p := limit.TokenBucket{Rate: limit.Rate{Count: 1, Period: 10 * time.Minute}, Burst: 1}
		return fleet{stores: [2]limit.Store{nodes[0], nodes[1]}, share: func(t *testing.T, _ *Engine) {
			deadline := time.Now().Add(20 * time.Second)
			for {
				d, err := nodes[1].Apply(context.Background(), pen, p, 0)
				if err != nil {
					t.Fatal(err)
				}
				if d.Remaining == 0 {
					return
				}
				if time.Now().After(deadline) {
					t.Fatal("gossip: the penalty never reached gateway B")
				}
				time.Sleep(10 * time.Millisecond)
			}
		}}
	}
	t.Fatalf("tier %q", tier)
	return fleet{}
}

// TestCountConcurrentFailuresOnRedis is the 64 concurrent wrong
// passwords against a limit of 5 on a real Redis (strict: every peek
// and charge one script), with a second policy and a penalty so that
// the peeks, the penalty checks and the charges take ApplyEach: at most
// 5 are admitted however many are in flight (each admitted request
// reserves its cost until its charge; a peek that overlaps charges may
// count one both in the store and as reserved, so fewer may be), the
// charges are exact, serial failures then reach the limit exactly, and
// the key ends refused under its penalty.
func TestCountConcurrentFailuresOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	r, err := redis.New(context.Background(), redis.Config{Addrs: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	login := loginRule(5)
	login.Penalty = time.Hour
	login.Policies = append(login.Policies, Policy{Algorithm: "fixed_window", Limit: 1000, Window: "24h"})
	e, err := New(Config{Rules: []Rule{login}}, r)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var inFlight, maxSeen, admitted atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := e.Decide(ctx, get("/login", "198.51.100.30"))
			if err != nil {
				t.Error(err)
				return
			}
			if res.Refused() {
				return
			}
			admitted.Add(1)
			n := inFlight.Add(1) - 1
			for m := maxSeen.Load(); n > m && !maxSeen.CompareAndSwap(m, n); m = maxSeen.Load() {
			}
			if err := res.Charge(ctx, 401, nil); err != nil {
				t.Error(err)
			}
			inFlight.Add(-1)
		}()
	}
	close(start)
	wg.Wait()
	n := admitted.Load()
	t.Logf("Redis: admitted %d of 64 (%d in flight at most)", n, maxSeen.Load()+1)
	if n < 1 || n > 5 {
		t.Fatalf("admitted %d of 64 concurrent failures, limit 5", n)
	}
	if k := reservedTotal(e); k != 0 {
		t.Fatalf("%d still reserved once every request was charged", k)
	}
	// Serial failures take what is left, exactly.
	for ; n < 5; n++ {
		res := decide(t, e, get("/login", "198.51.100.30"))
		if res.Refused() {
			t.Fatalf("serial failure %d refused: %v", n+1, res.Outcome)
		}
		charge(t, &res, 401, nil)
	}
	// The day policy counted every admitted failure, each once.
	d, err := r.Apply(ctx, "login"+keySep+"login-2"+keySep+"fixed_window=24h0m0s"+keySep+"198.51.100.30", limit.FixedWindow{Limit: 1000, Window: 24 * time.Hour}, 0)
	if err != nil || d.Remaining != 1000-n {
		t.Fatalf("day policy: %+v %v, want %d charged", d, err, n)
	}
	res := decide(t, e, get("/login", "198.51.100.30"))
	if !res.Refused() || res.Penalty() <= 59*time.Minute {
		t.Fatalf("after: %v penalty %v", res.Outcome, res.Penalty())
	}
}
