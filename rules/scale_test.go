package rules

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/racebuild"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// testScale is a settable Scale.
type testScale struct{ pm atomic.Int64 }

func (s *testScale) Permille() int64 { return s.pm.Load() }

func scaledEngine(t *testing.T, sc *testScale) (*Engine, *clock) {
	t.Helper()
	return newEngine(t, Config{
		Headers: Headers{Styles: []string{StyleDraft10, StyleLegacy}},
		Rules: []Rule{{
			Name:     "api",
			Policies: []Policy{{Algorithm: "fixed_window", Limit: 10, Window: "1m", Adaptive: "origin"}},
		}},
		Scales: func(name string) Scale {
			if name == "origin" {
				return sc
			}
			return nil
		},
	})
}

func TestAdaptivePolicyFollowsTheFactor(t *testing.T) {
	sc := &testScale{}
	sc.pm.Store(500)
	e, clk := scaledEngine(t, sc)
	r := get("/x", "192.0.2.1")
	for i := range 5 {
		if res := decide(t, e, r); res.Outcome != Allowed {
			t.Fatalf("request %d at 50%%: %v", i+1, res.Outcome)
		}
	}
	res := decide(t, e, r)
	if res.Outcome != Refused {
		t.Fatalf("6th request at 50%% of 10: %v, want refused", res.Outcome)
	}
	h := headers(&res)
	if h[HeaderXRateLimitLimit] != "5" || !strings.Contains(h[HeaderRateLimitPolicy], "q=5;") {
		t.Fatalf("headers report %q and %q, want the effective limit 5", h[HeaderXRateLimitLimit], h[HeaderRateLimitPolicy])
	}
	// The factor recovers: the same window's count goes on, under the
	// new limit.
	sc.pm.Store(1000)
	for i := range 5 {
		if res := decide(t, e, r); res.Outcome != Allowed {
			t.Fatalf("request %d after recovery: %v", i+6, res.Outcome)
		}
	}
	res = decide(t, e, r)
	if res.Outcome != Refused || headers(&res)[HeaderXRateLimitLimit] != "10" {
		t.Fatalf("11th request at 100%%: %v, limit %s", res.Outcome, headers(&res)[HeaderXRateLimitLimit])
	}
	clk.add(time.Minute)
	// Out-of-range factors are clamped: 0 is read as 1‰ (limit 1).
	sc.pm.Store(0)
	if res := decide(t, e, r); res.Outcome != Allowed {
		t.Fatalf("first request at the lowest factor: %v", res.Outcome)
	}
	if res := decide(t, e, r); res.Outcome != Refused {
		t.Fatalf("second request at the lowest factor: %v", res.Outcome)
	}
}

func TestAdaptiveDecideAllocatesNothing(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	sc := &testScale{}
	sc.pm.Store(700)
	e, _ := newEngine(t, Config{Rules: []Rule{{
		Name: "api", Policies: []Policy{{Rate: "1000000/s", Adaptive: "origin"}},
	}}, Scales: func(string) Scale { return sc }})
	r := get("/x", "192.0.2.1")
	n := allowedAllocs(t, e, r)
	if n != 0 {
		t.Fatalf("%v allocs per decision of an adaptive policy, want 0", n)
	}
}

func TestAdaptiveConcurrentFactorChanges(t *testing.T) {
	sc := &testScale{}
	sc.pm.Store(1000)
	e, _ := scaledEngine(t, sc)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := get("/x", "192.0.2."+string(rune('1'+g)))
			for i := range 200 {
				if g == 0 {
					sc.pm.Store(int64(100 + i*4))
				}
				res, err := e.Decide(context.Background(), r)
				if err != nil {
					t.Error(err)
					return
				}
				if res.Decision.Limit < 1 || res.Decision.Limit > 10 {
					t.Errorf("limit %d outside [1, 10]", res.Decision.Limit)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestAdaptiveControllerNames(t *testing.T) {
	st, err := memory.New(memory.Config{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pol := []Policy{{Rate: "10/s", Adaptive: "nope"}}
	_, err = New(Config{Rules: []Rule{{Name: "a", Policies: pol}},
		Scales: func(string) Scale { return nil }}, st)
	if err == nil || !strings.Contains(err.Error(), `rules[0].policies[0].adaptive: unknown adaptive controller "nope"`) {
		t.Fatalf("unknown controller: %v", err)
	}
	// Validate has no controllers: it checks only the name's syntax.
	c := Config{Rules: []Rule{{Name: "a", Policies: pol}}}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if _, err := New(c, st); !errors.Is(err, ErrNoScales) {
		t.Fatalf("New without Scales: %v, want ErrNoScales", err)
	}
	c.Rules[0].Policies[0].Adaptive = "bad name"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "adaptive") {
		t.Fatalf("a bad controller name: %v", err)
	}
}
