package rules

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// penalised is an IP rule of 2 per minute whose refusal costs 15
// minutes.
func penalised() Rule {
	return Rule{
		Name:     "api",
		Penalty:  15 * time.Minute,
		Policies: []Policy{{Algorithm: "fixed_window", Limit: 2, Window: "1m"}},
	}
}

func TestPenaltyExactRetryAfterNotExtendedAndExpires(t *testing.T) {
	obs := &events{}
	e, clk := newEngine(t, Config{Observer: obs, Rules: []Rule{penalised()}})
	const ip = "203.0.113.5"
	for i := range 2 {
		if res := decide(t, e, get("/", ip)); res.Refused() {
			t.Fatalf("request %d refused", i)
		}
	}
	clk.add(10 * time.Second)
	// The third is refused by the limit, which starts the penalty: its
	// Retry-After is the penalty's, not the window's 50s.
	res := decide(t, e, get("/", ip))
	if !res.Refused() || res.Penalty() != 15*time.Minute {
		t.Fatalf("third: %v, penalty %v", res.Outcome, res.Penalty())
	}
	if h := headers(&res); h[HeaderRetryAfter] != "900" || h[HeaderRateLimit] != `"api";r=0;t=900` {
		t.Fatalf("headers %v", h)
	}
	ev := obs.list[len(obs.list)-1]
	if ev.Outcome != Refused || ev.Penalty != 15*time.Minute || !ev.PenaltyStarted {
		t.Fatalf("start event %+v", ev)
	}
	// Well after the window frees, the key is still refused, for exactly
	// what the penalty has left; refusals do not extend it.
	for _, step := range []time.Duration{2 * time.Minute, 3*time.Minute + 500*time.Millisecond, 4 * time.Minute} {
		clk.add(step)
		res := decide(t, e, get("/", ip))
		left := 15*time.Minute - (clk.wall().Sub(time.Date(2026, 11, 30, 12, 0, 10, 0, time.UTC)))
		if !res.Refused() || res.Penalty() != left {
			t.Fatalf("after %v: %v, penalty %v, want %v", step, res.Outcome, res.Penalty(), left)
		}
		if h := headers(&res); h[HeaderRetryAfter] != strconv.FormatInt(CeilSeconds(left), 10) {
			t.Fatalf("Retry-After %s, want %d", h[HeaderRetryAfter], CeilSeconds(left))
		}
		ev := obs.list[len(obs.list)-1]
		if ev.Penalty != left || ev.PenaltyStarted || ev.Outcome != Refused {
			t.Fatalf("event in penalty %+v", ev)
		}
	}
	// Another client is not affected.
	if res := decide(t, e, get("/", "203.0.113.6")); res.Refused() {
		t.Fatal("another key refused")
	}
	// One nanosecond before the end, refused; at the end, allowed.
	clk.ns.Store(time.Date(2026, 11, 30, 12, 15, 10, 0, time.UTC).UnixNano() - 1)
	if res := decide(t, e, get("/", ip)); !res.Refused() || res.Penalty() != time.Nanosecond {
		t.Fatalf("1ns before the end: %v %v", res.Outcome, res.Penalty())
	}
	clk.add(time.Nanosecond)
	if res := decide(t, e, get("/", ip)); res.Refused() || res.Penalty() != 0 {
		t.Fatalf("at the end: %v %v", res.Outcome, res.Penalty())
	}
}

func TestPenaltyOfACountingRule(t *testing.T) {
	// The login defence: 3 failures per 15m, then 1h refused. The
	// fourth failure's peek refuses and starts the penalty.
	obs := &events{}
	r := loginRule(3)
	r.Policies[0].Penalty = time.Hour
	e, clk := newEngine(t, Config{Observer: obs, Rules: []Rule{r}})
	const ip = "203.0.113.9"
	for range 3 {
		res := decide(t, e, get("/login", ip))
		charge(t, &res, 401, nil)
	}
	res := decide(t, e, get("/login", ip))
	if !res.Refused() || res.Penalty() != time.Hour || headers(&res)[HeaderRetryAfter] != "3600" {
		t.Fatalf("fourth: %v %v %v", res.Outcome, res.Penalty(), headers(&res))
	}
	clk.add(20 * time.Minute) // the window has freed; the penalty has not
	if res := decide(t, e, get("/login", ip)); !res.Refused() || res.Penalty() != 40*time.Minute {
		t.Fatalf("in penalty: %v %v", res.Outcome, res.Penalty())
	}
	clk.add(40 * time.Minute)
	res = decide(t, e, get("/login", ip))
	if res.Refused() {
		t.Fatal("refused after the penalty")
	}
	charge(t, &res, 200, nil)
}

func TestPenaltyStartedByAChargeThatFoundTheLimitFull(t *testing.T) {
	obs := &events{}
	r := loginRule(1)
	r.Penalty = 10 * time.Minute
	e, _ := newEngine(t, Config{Observer: obs, Rules: []Rule{r}})
	const ip = "203.0.113.10"
	a := decide(t, e, get("/login", ip))
	b := decide(t, e, get("/login", ip)) // in flight together
	charge(t, &a, 401, nil)
	charge(t, &b, 401, nil) // finds the limit full: starts the penalty
	ev := obs.list[len(obs.list)-1]
	if ev.Outcome != Counted || ev.Decision.Allowed || ev.Penalty != 10*time.Minute || !ev.PenaltyStarted {
		t.Fatalf("charge event %+v", ev)
	}
	if res := decide(t, e, get("/login", ip)); !res.Refused() || res.Penalty() != 10*time.Minute {
		t.Fatalf("after: %v %v", res.Outcome, res.Penalty())
	}
}

func TestPenaltyKeyIsItsOwn(t *testing.T) {
	// The penalty lives beside the counter in the policy's namespace:
	// a rule's penalty never touches another rule's, and a reload that
	// keeps the rule keeps the penalty running (it is in the store).
	e, _ := newEngine(t, Config{Rules: []Rule{penalised(), {Name: "other", Policies: []Policy{{Algorithm: "fixed_window", Limit: 100, Window: "1m"}}}}})
	for range 3 {
		decide(t, e, get("/", "203.0.113.11"))
	}
	res := decide(t, e, get("/", "203.0.113.11"))
	if !res.Refused() || res.Rule() != "api" {
		t.Fatalf("%v by %q", res.Outcome, res.Rule())
	}
	var found, other bool
	for i := 0; i < res.n; i++ {
		a := res.at(i)
		switch a.rule.name {
		case "api":
			found = strings.HasPrefix(a.penKey, a.policy.keyPrefix+penaltyMarker) && a.penKey != a.key
		case "other":
			other = a.penKey == ""
		}
	}
	if !found || !other {
		t.Fatal("penalty keys")
	}
}

func TestPenaltyValidation(t *testing.T) {
	cases := []struct {
		rule Rule
		path string
		want string
	}{
		{Rule{Name: "a", Penalty: time.Millisecond, Policies: oneRate}, "rules[0].penalty", "want between"},
		{Rule{Name: "a", Penalty: 31 * 24 * time.Hour, Policies: oneRate}, "rules[0].penalty", "want between"},
		{Rule{Name: "a", Penalty: -time.Second, Policies: oneRate}, "rules[0].penalty", "want between"},
		{Rule{Name: "a", Policies: []Policy{{Rate: "1/s", Penalty: 500 * time.Millisecond}}}, "rules[0].policies[0].penalty", "want between"},
		{Rule{Name: "a", Policies: []Policy{{Algorithm: AlgConcurrency, Limit: 1, Penalty: time.Minute}}}, "rules[0].policies[0].penalty", "concurrency"},
		{Rule{Name: "a", Penalty: time.Minute, Policies: []Policy{{Algorithm: AlgConcurrency, Limit: 1}}}, "rules[0].penalty", "only concurrency"},
		{Rule{Name: "a", Tiers: &Tiers{Default: "free", Plans: map[string][]Policy{"free": {{Rate: "1/s", Penalty: time.Nanosecond}}}}}, "rules[0].tiers.plans.free[0].penalty", "want between"},
	}
	for _, c := range cases {
		cfg := Config{Rules: []Rule{c.rule}}
		if err := cfg.Validate(); !hasProblem(err, c.path, c.want) {
			t.Errorf("%+v: got %v, want %s: ...%s", c.rule, err, c.path, c.want)
		}
	}
	ok := Config{Rules: []Rule{{Name: "a", Penalty: 30 * 24 * time.Hour, Policies: []Policy{{Rate: "1/s"}, {Rate: "10/m", Penalty: time.Second}, {Algorithm: AlgConcurrency, Limit: 2}}}}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestShadowPenaltyReportsButNeverRefuses(t *testing.T) {
	obs := &events{}
	r := penalised()
	r.Shadow = true
	e, clk := newEngine(t, Config{Observer: obs, Rules: []Rule{r}})
	for range 3 {
		decide(t, e, get("/", "203.0.113.12"))
	}
	clk.add(2 * time.Minute)
	res := decide(t, e, get("/", "203.0.113.12"))
	if res.Refused() || res.Penalty() != 0 {
		t.Fatal("shadow refused")
	}
	ev := obs.list[len(obs.list)-1]
	if ev.Outcome != ShadowRefused || ev.Penalty != 13*time.Minute || ev.PenaltyStarted {
		t.Fatalf("event %+v", ev)
	}
}

func TestPenaltyCheckAllocatesNothing(t *testing.T) {
	r := penalised()
	r.Policies[0].Limit = 1 << 40
	e, _ := newEngine(t, Config{Rules: []Rule{r}})
	if n := allowedAllocs(t, e, get("/", "203.0.113.13")); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// calls counts the store calls of a real store.
type calls struct {
	limit.Store
	n atomic.Int64
}

func (c *calls) Apply(ctx context.Context, key string, p limit.Policy, cost int64) (limit.Decision, error) {
	c.n.Add(1)
	return c.Store.Apply(ctx, key, p, cost)
}

func (c *calls) ApplyAll(ctx context.Context, reqs []limit.Request) (limit.Decision, error) {
	c.n.Add(1)
	return c.Store.ApplyAll(ctx, reqs)
}

// TestKnownRefusalsSpareTheStore: a key under its penalty, or a counting
// rule's key with nothing left, is refused again without a store call
// (refusalCache) with the same exact Retry-After, until the instant the
// store would let it pass; then the store decides again.
func TestKnownRefusalsSpareTheStore(t *testing.T) {
	clk := newClock()
	mem, err := memory.New(memory.Config{Clock: clk.now, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	st := &calls{Store: mem}
	plain := loginRule(2)
	plain.Count = nil
	plain.Name, plain.Penalty = "penalised", 10*time.Minute
	counting := loginRule(2)
	counting.Match = Match{Paths: []string{"/count"}}
	e, err := New(Config{Now: clk.wall, Rules: []Rule{plain, counting}}, st)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		decide(t, e, get("/login", "192.0.2.50"))
	}
	for range 2 {
		res := decide(t, e, get("/count", "192.0.2.50"))
		charge(t, &res, 401, nil)
	}
	before := st.n.Load()
	for i := range 50 {
		clk.add(time.Second)
		res := decide(t, e, get("/login", "192.0.2.50"))
		if want := 10*time.Minute - time.Duration(i+1)*time.Second; !res.Refused() || res.Penalty() != want {
			t.Fatalf("penalised %d: %v %v, want %v", i, res.Outcome, res.Penalty(), want)
		}
		res = decide(t, e, get("/count", "192.0.2.50"))
		if !res.Refused() || res.Decision.RetryAfter != 15*time.Minute-time.Duration(i+1)*time.Second {
			t.Fatalf("counting %d: %v %+v", i, res.Outcome, res.Decision)
		}
	}
	if n := st.n.Load() - before; n != 0 {
		t.Fatalf("%d store calls for 100 known refusals", n)
	}
	clk.add(15 * time.Minute)
	if res := decide(t, e, get("/login", "192.0.2.50")); res.Refused() {
		t.Fatalf("penalised after the penalty: %v", res.Outcome)
	}
	if res := decide(t, e, get("/count", "192.0.2.50")); res.Refused() {
		t.Fatalf("counting after the window: %v", res.Outcome)
	}
	if st.n.Load() == before {
		t.Fatal("no store call once the refusals ran out")
	}
}

// A store that fails: a counting rule fails open by default (the peek
// errs, the request goes on, Charge reports the error, an Errored
// event, no key in the text), and closed when its mode says so.
func TestCountAndPenaltyOnAFailingStore(t *testing.T) {
	obs := &events{}
	r := loginRule(3)
	r.Penalty = time.Minute
	e, err := New(Config{Observer: obs, Rules: []Rule{r}}, failingStore{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := e.Decide(ctx, get("/login", "192.0.2.60"))
	if !errors.Is(err, ErrStore) || res.Outcome != Errored || res.Refused() || !res.Counts() {
		t.Fatalf("decide: %v %v counts %v", res.Outcome, err, res.Counts())
	}
	err = res.Charge(ctx, 401, nil)
	if !errors.Is(err, ErrStore) || !errors.Is(err, errDown) || strings.Contains(err.Error(), "192.0.2.60") {
		t.Fatalf("charge: %v", err)
	}
	if ev := obs.list[len(obs.list)-1]; ev.Outcome != Errored || !errors.Is(ev.Err, errDown) {
		t.Fatalf("charge event %+v", ev)
	}
	e, err = New(Config{OnError: "closed", Rules: []Rule{r}}, failingStore{})
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := e.Decide(ctx, get("/login", "192.0.2.60")); !res.Refused() || res.Counts() || res.Penalty() != 0 {
		t.Fatalf("closed: %v counts %v penalty %v", res.Outcome, res.Counts(), res.Penalty())
	}
}

// A penalty on a plan's policy (Tiers) runs as on any policy, and only
// for that plan.
func TestPenaltyOfAPlan(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{{
		Name: "api", Key: Key{"header:X-API-Key"},
		Tiers: &Tiers{
			Plans: map[string][]Policy{
				"free": {{Algorithm: "fixed_window", Limit: 1, Window: "1m", Penalty: 5 * time.Minute}},
				"pro":  {{Algorithm: "fixed_window", Limit: 1, Window: "1m"}},
			},
			Members: map[string]string{"k-pro": "pro"},
			Default: "free",
		},
	}}})
	for _, c := range []struct {
		key     string
		penalty time.Duration
	}{{"k-free", 5 * time.Minute}, {"k-pro", 0}} {
		decide(t, e, get("/", "192.0.2.61").with("X-API-Key", c.key))
		res := decide(t, e, get("/", "192.0.2.61").with("X-API-Key", c.key))
		if !res.Refused() || res.Penalty() != c.penalty {
			t.Errorf("%s: %v penalty %v, want %v", c.key, res.Outcome, res.Penalty(), c.penalty)
		}
	}
}

// A policy scaled by its adaptive controller keeps its penalty.
func TestPenaltyOfAScaledPolicy(t *testing.T) {
	sc := &testScale{}
	sc.pm.Store(500)
	e, _ := newEngine(t, Config{
		Rules: []Rule{{Name: "api", Penalty: 2 * time.Minute,
			Policies: []Policy{{Algorithm: "fixed_window", Limit: 2, Window: "1m", Adaptive: "origin"}}}},
		Scales: func(string) Scale { return sc },
	})
	decide(t, e, get("/", "192.0.2.62")) // 1 of the scaled limit 1
	if res := decide(t, e, get("/", "192.0.2.62")); !res.Refused() || res.Penalty() != 2*time.Minute {
		t.Fatalf("scaled: %v penalty %v", res.Outcome, res.Penalty())
	}
}
