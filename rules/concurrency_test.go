package rules

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/racebuild"
	"github.com/tollgate-dev/tollgate/store/memory"
)

func concEngine(t *testing.T, rules []Rule) (*Engine, *memory.Slots, *clock) {
	t.Helper()
	slots := memory.NewSlots()
	e, clk := newEngine(t, Config{Rules: rules, Slots: slots, Headers: Headers{Styles: []string{StyleDraft10, StyleLegacy}}})
	return e, slots, clk
}

func TestConcurrencyHoldsUntilRelease(t *testing.T) {
	e, slots, _ := concEngine(t, []Rule{{
		Name: "conn", Policies: []Policy{{Algorithm: AlgConcurrency, Limit: 2, RetryAfter: 3 * time.Second}},
	}})
	r := get("/x", "192.0.2.1")
	a, b := decide(t, e, r), decide(t, e, r)
	if a.Outcome != Allowed || b.Outcome != Allowed || !a.Holds() || !b.Holds() {
		t.Fatalf("first two: %v %v", a.Outcome, b.Outcome)
	}
	if h := headers(&b); h[HeaderXRateLimitLimit] != "2" || h[HeaderXRateLimitRemaining] != "0" {
		t.Errorf("headers of the second: %v", h)
	}
	c := decide(t, e, r)
	if c.Outcome != Refused || c.Holds() {
		t.Fatalf("third: %v, holds %v", c.Outcome, c.Holds())
	}
	h := headers(&c)
	if h[HeaderRetryAfter] != "3" || !strings.Contains(h[HeaderRateLimitPolicy], `"conn";q=2`) {
		t.Errorf("refusal headers %v", h)
	}
	if body := string(c.Refusal().Body); !strings.Contains(body, `"violated-policies":["conn"]`) {
		t.Errorf("refusal body %s", body)
	}
	// Another key has its own slots.
	if o := decide(t, e, get("/x", "192.0.2.2")); o.Outcome != Allowed {
		t.Fatalf("another key: %v", o.Outcome)
	} else {
		o.Release()
	}
	a.Release()
	a.Release() // a second release gives nothing back twice
	if d := decide(t, e, r); d.Outcome != Allowed {
		t.Fatalf("after a release: %v", d.Outcome)
	} else {
		d.Release()
	}
	b.Release()
	if n := slots.Keys(); n != 0 {
		t.Fatalf("%d keys still hold slots", n)
	}
}

// A request the concurrency limit refuses charges no rate policy; one a
// rate policy refuses gives its slot back.
func TestConcurrencyAndRatesChargeTogether(t *testing.T) {
	e, slots, _ := concEngine(t, []Rule{{
		Name: "api",
		Policies: []Policy{
			{Name: "conn", Algorithm: AlgConcurrency, Limit: 1},
			{Name: "rate", Algorithm: "fixed_window", Limit: 2, Window: "1m"},
		},
	}})
	r := get("/x", "192.0.2.1")
	a := decide(t, e, r)
	if a.Outcome != Allowed || !a.Holds() {
		t.Fatalf("first: %v", a.Outcome)
	}
	for range 3 { // refused by conn: the window is not charged
		if b := decide(t, e, r); b.Outcome != Refused || b.Rule() != "api" || headers(&b)[HeaderRetryAfter] != "1" {
			t.Fatalf("while held: %v %v", b.Outcome, headers(&b))
		}
	}
	a.Release()
	b := decide(t, e, r)
	if b.Outcome != Allowed || b.Decision.Remaining != 0 {
		t.Fatalf("second: %v, %d left in the window (want 0: two charged)", b.Outcome, b.Decision.Remaining)
	}
	b.Release()
	c := decide(t, e, r)
	if c.Outcome != Refused || c.Holds() || slots.Held(c.slotAt(0).key) != 0 {
		t.Fatalf("the window refuses: %v, holds %v", c.Outcome, c.Holds())
	}
}

func TestConcurrencyScaledByController(t *testing.T) {
	sc := &testScale{}
	sc.pm.Store(500)
	slots := memory.NewSlots()
	e, _ := newEngine(t, Config{Rules: []Rule{{
		Name: "conn", Key: Key{"global"}, Policies: []Policy{{Algorithm: AlgConcurrency, Limit: 4, Adaptive: "o"}},
	}}, Slots: slots, Scales: func(string) Scale { return sc }})
	var held []Result
	for i := range 3 {
		res := decide(t, e, get("/", "192.0.2.1"))
		if want := i < 2; (res.Outcome == Allowed) != want {
			t.Fatalf("request %d at 50%% of 4: %v", i+1, res.Outcome)
		}
		held = append(held, res)
	}
	sc.pm.Store(1000)
	if res := decide(t, e, get("/", "192.0.2.1")); res.Outcome != Allowed {
		t.Fatalf("at 100%%: %v", res.Outcome)
	} else {
		held = append(held, res)
	}
	for i := range held {
		held[i].Release()
	}
	if slots.Keys() != 0 {
		t.Fatal("slots leaked")
	}
}

func TestConcurrencyConfigErrors(t *testing.T) {
	cases := []struct {
		rule Rule
		want string
	}{
		{Rule{Name: "a", Policies: []Policy{{Algorithm: AlgConcurrency}}}, "rules[0].policies[0].limit: concurrency needs a limit"},
		{Rule{Name: "a", Policies: []Policy{{Algorithm: AlgConcurrency, Limit: 1, Rate: "1/s"}}}, "concurrency takes limit, not rate"},
		{Rule{Name: "a", Policies: []Policy{{Algorithm: AlgConcurrency, Limit: 1, Window: "1m"}}}, "concurrency takes limit and retry_after only"},
		{Rule{Name: "a", Shadow: true, Policies: []Policy{{Algorithm: AlgConcurrency, Limit: 1}}}, "a shadow rule cannot hold concurrency slots"},
		{Rule{Name: "a", Consistency: ConsistencyLocal, Policies: []Policy{{Algorithm: AlgConcurrency, Limit: 1}}}, "takes no consistency tier"},
		{Rule{Name: "a", Tiers: &Tiers{Default: "free", Plans: map[string][]Policy{"free": {{Algorithm: AlgConcurrency, Limit: 1}}}}}, "concurrency goes in a rule's policies, not in a plan"},
	}
	for _, c := range cases {
		cfg := Config{Rules: []Rule{c.rule}}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.rule, err, c.want)
		}
	}
	st, _ := memory.New(memory.Config{SweepInterval: -1})
	defer st.Close()
	if _, err := New(Config{Rules: []Rule{{Name: "a", Policies: []Policy{{Algorithm: AlgConcurrency, Limit: 1}}}}}, st); err != ErrNoSlots {
		t.Errorf("New without Slots: %v", err)
	}
}

func TestConcurrencyDecideAllocatesNothing(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	e, _, _ := concEngine(t, []Rule{{
		Name: "conn", Policies: []Policy{{Algorithm: AlgConcurrency, Limit: 10}},
	}})
	r := get("/x", "192.0.2.1")
	ctx := context.Background()
	res := decide(t, e, r)
	res.Release()
	n := testing.AllocsPerRun(1000, func() {
		res, err := e.Decide(ctx, r)
		if err != nil || res.Outcome != Allowed {
			t.Fatal(res.Outcome, err)
		}
		res.Release()
	})
	if n != 0 {
		t.Fatalf("%v allocs per decision and release, want 0", n)
	}
}

// recordingObserver keeps the events it is given.
type recordingObserver struct{ events []Event }

func (o *recordingObserver) Observe(ev Event) { o.events = append(o.events, ev) }

func TestConcurrencyObserved(t *testing.T) {
	obs := &recordingObserver{}
	slots := memory.NewSlots()
	e, _ := newEngine(t, Config{Observer: obs, Slots: slots, Rules: []Rule{{
		Name: "conn", Policies: []Policy{{Algorithm: AlgConcurrency, Limit: 1}},
	}}})
	a := decide(t, e, get("/", "192.0.2.1"))
	b := decide(t, e, get("/", "192.0.2.1"))
	a.Release()
	if len(obs.events) != 2 || obs.events[0].Outcome != Allowed || obs.events[1].Outcome != Refused ||
		string(obs.events[1].Key) != "192.0.2.1" || !obs.events[1].Decisive {
		t.Fatalf("events %+v (second: %v)", obs.events, b.Outcome)
	}
}
