package rules

import (
	"strconv"
	"strings"
	"testing"
	"time"
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
