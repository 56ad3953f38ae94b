package rules

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// answer is a test AnswerHeader.
type answer map[string]string

func (a answer) Header(name string) (string, bool) {
	v, ok := a[name]
	return v, ok
}

// loginRule counts the failed logins (401, 403) of a client IP: limit
// failures per 15m.
func loginRule(limit int64) Rule {
	return Rule{
		Name:     "login",
		Match:    Match{Paths: []string{"/login"}},
		Count:    &Count{Statuses: []string{"401", "403"}},
		Policies: []Policy{{Algorithm: "fixed_window", Limit: limit, Window: "15m"}},
	}
}

func charge(t testing.TB, res *Result, status int, h AnswerHeader) {
	t.Helper()
	if !res.Counts() {
		t.Fatalf("Counts false for %v", res.Outcome)
	}
	if err := res.Charge(context.Background(), status, h); err != nil {
		t.Fatal(err)
	}
}

func TestCountChargesOnlyTheAnswersItNames(t *testing.T) {
	obs := &events{}
	e, _ := newEngine(t, Config{Observer: obs, Rules: []Rule{loginRule(3)}})
	// A user who logs in is never counted.
	for i := range 10 {
		res := decide(t, e, get("/login", "192.0.2.1"))
		if res.Refused() {
			t.Fatalf("success %d refused", i)
		}
		if h := headers(&res); h[HeaderRateLimit] != `"login";r=3;t=0` && i == 0 {
			t.Fatalf("first peek headers %v", h)
		}
		charge(t, &res, 200, nil)
		if res.Counts() {
			t.Fatal("Counts still true after Charge")
		}
	}
	// Failures are: three pass, the fourth is refused before proxying.
	for i := range 3 {
		res := decide(t, e, get("/login", "192.0.2.2"))
		if res.Refused() {
			t.Fatalf("failure %d refused", i)
		}
		if got, want := res.Decision.Remaining, int64(3-i); got != want {
			t.Fatalf("failure %d: remaining %d, want %d (a peek charges nothing)", i, got, want)
		}
		charge(t, &res, 401, nil)
		charge2 := res.Charge(context.Background(), 401, nil) // a second call charges nothing
		if charge2 != nil {
			t.Fatal(charge2)
		}
	}
	res := decide(t, e, get("/login", "192.0.2.2"))
	if !res.Refused() || res.Counts() {
		t.Fatalf("fourth failure: %v, counts %v", res.Outcome, res.Counts())
	}
	if h := headers(&res); h[HeaderRetryAfter] != "900" || h[HeaderRateLimit] != `"login";r=0;t=900` {
		t.Fatalf("refusal headers %v", h)
	}
	if res.Penalty() != 0 {
		t.Fatal("a refusal without penalty reports one")
	}
	// Other paths are not the rule's.
	if res := decide(t, e, get("/", "192.0.2.2")); res.Matched() || res.Counts() {
		t.Fatal("rule matched /")
	}
	var counted, refused int
	for _, ev := range obs.list {
		switch ev.Outcome {
		case Counted:
			counted++
			if ev.Key != "192.0.2.2" || ev.Rule != "login" || !ev.Decision.Allowed {
				t.Fatalf("counted event %+v", ev)
			}
		case Refused:
			refused++
		}
	}
	if counted != 3 || refused != 1 {
		t.Fatalf("%d counted and %d refused events", counted, refused)
	}
}

func TestCountStatusesClassesRangesHeaderAndNoAnswer(t *testing.T) {
	cases := []struct {
		count  Count
		status int
		h      answer
		want   bool
	}{
		{Count{Statuses: []string{"4xx"}}, 404, nil, true},
		{Count{Statuses: []string{"4xx"}}, 500, nil, false},
		{Count{Statuses: []string{"500-503"}}, 503, nil, true},
		{Count{Statuses: []string{"500-503"}}, 504, nil, false},
		{Count{Statuses: []string{"5xx"}}, 0, nil, true}, // no answer is a 502
		{Count{Statuses: []string{"502"}}, 0, nil, true},
		{Count{Statuses: []string{"4xx"}}, 0, nil, false},
		{Count{Statuses: []string{"200"}, Header: HeaderMatch{Name: "x-login-failed"}}, 200, answer{"X-Login-Failed": "1"}, true},
		{Count{Statuses: []string{"200"}, Header: HeaderMatch{Name: "x-login-failed"}}, 200, answer{"X-Login-Failed": ""}, false},
		{Count{Statuses: []string{"200"}, Header: HeaderMatch{Name: "x-login-failed"}}, 200, nil, false},
		{Count{Header: HeaderMatch{Name: "X-Result", Value: "fail"}}, 200, answer{"X-Result": "fail"}, true},
		{Count{Header: HeaderMatch{Name: "X-Result", Value: "fail"}}, 200, answer{"X-Result": "ok"}, false},
	}
	for i, c := range cases {
		r := loginRule(1)
		r.Count = &c.count
		e, _ := newEngine(t, Config{Rules: []Rule{r}})
		res := decide(t, e, get("/login", "192.0.2.9"))
		charge(t, &res, c.status, c.h)
		after := decide(t, e, get("/login", "192.0.2.9"))
		got := after.Refused()
		if got != c.want {
			t.Errorf("case %d (%v, %d, %v): charged %v, want %v", i, c.count, c.status, c.h, got, c.want)
		}
	}
}

func TestCountingRuleDoesNotChargeTheOthersOfARefusedRequest(t *testing.T) {
	// A counting rule whose peek refuses refuses before the charge batch:
	// the other rule is not charged (all or nothing holds).
	e, _ := newEngine(t, Config{Rules: []Rule{
		loginRule(1),
		{Name: "all", Policies: []Policy{{Algorithm: "fixed_window", Limit: 10, Window: "1m"}}},
	}})
	res := decide(t, e, get("/login", "192.0.2.3"))
	if res.Refused() || res.Decision.Remaining != 1 {
		t.Fatalf("first: %v remaining %d", res.Outcome, res.Decision.Remaining)
	}
	charge(t, &res, 401, nil)
	for range 5 {
		if res := decide(t, e, get("/login", "192.0.2.3")); !res.Refused() || res.Rule() != "login" {
			t.Fatalf("refused by %q: %v", res.Rule(), res.Outcome)
		}
	}
	// "all" was charged once (the first request), not by the refusals.
	res = decide(t, e, get("/", "192.0.2.3"))
	if res.Decision.Remaining != 8 {
		t.Fatalf("all: remaining %d, want 8", res.Decision.Remaining)
	}
}

func TestShadowCountingRuleNeverRefuses(t *testing.T) {
	obs := &events{}
	r := loginRule(1)
	r.Shadow = true
	e, _ := newEngine(t, Config{Observer: obs, Rules: []Rule{r}})
	for i := range 4 {
		res := decide(t, e, get("/login", "192.0.2.4"))
		if res.Refused() {
			t.Fatalf("shadow refused %d", i)
		}
		if res.Counts() {
			charge(t, &res, 401, nil)
		}
	}
	var outs []string
	for _, ev := range obs.list {
		outs = append(outs, ev.Outcome.String())
	}
	// Charged once; then it would have refused, and a request it would
	// have refused is not charged (as an enforced one would not be).
	if got := strings.Join(outs, ","); got != "shadow_allowed,counted,shadow_refused,shadow_refused,shadow_refused" {
		t.Fatalf("observed %s", got)
	}
}

// TestCountConcurrentFailures is issue 26's exactness test at the rules
// level: 64 concurrent wrong passwords against a limit of 5 admit at
// most 5 plus the requests in flight (admitted, not yet charged) when
// each was admitted; the charges themselves are exact (the count ends
// at the limit, and the next failure is refused).
func TestCountConcurrentFailures(t *testing.T) {
	for _, mode := range []string{"interleaved", "all-decide-first"} {
		t.Run(mode, func(t *testing.T) {
			e, _ := newEngine(t, Config{Rules: []Rule{loginRule(5)}})
			var inFlight, maxSeen, admitted atomic.Int64
			var wg, decided sync.WaitGroup
			decided.Add(64)
			for range 64 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := e.Decide(context.Background(), get("/login", "198.51.100.7"))
					if err != nil {
						t.Error(err)
						decided.Done()
						return
					}
					if !res.Refused() {
						admitted.Add(1)
						n := inFlight.Add(1) - 1
						for m := maxSeen.Load(); n > m && !maxSeen.CompareAndSwap(m, n); m = maxSeen.Load() {
						}
					}
					decided.Done()
					if mode == "all-decide-first" {
						decided.Wait()
					}
					if !res.Refused() {
						if err := res.Charge(context.Background(), 401, nil); err != nil {
							t.Error(err)
						}
						inFlight.Add(-1)
					}
				}()
			}
			wg.Wait()
			n, bound := admitted.Load(), 5+maxSeen.Load()
			t.Logf("%s: admitted %d of 64, bound 5 + %d in flight", mode, n, maxSeen.Load())
			if n > bound || n < 5 {
				t.Fatalf("admitted %d, bound %d", n, bound)
			}
			if mode == "all-decide-first" && n != 64 {
				t.Fatalf("all 64 peeked before any charge, yet %d admitted", n)
			}
			res := decide(t, e, get("/login", "198.51.100.7"))
			if !res.Refused() || res.Decision.Remaining != 0 {
				t.Fatalf("after: %v remaining %d", res.Outcome, res.Decision.Remaining)
			}
		})
	}
}

func TestCountingDecideAndChargeAllocateNothing(t *testing.T) {
	r := loginRule(1 << 40)
	e, _ := newEngine(t, Config{Rules: []Rule{r, {Name: "ip", Policies: []Policy{{Algorithm: "fixed_window", Limit: 1 << 40, Window: "1m"}}}}})
	rq := get("/login", "192.0.2.5")
	ctx := context.Background()
	res := decide(t, e, rq)
	charge(t, &res, 401, nil)
	h := answer{}
	allocs := testing.AllocsPerRun(1000, func() {
		res, err := e.Decide(ctx, rq)
		if err != nil || res.Refused() {
			t.Fatal(res.Outcome, err)
		}
		if err := res.Charge(ctx, 401, h); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per counting Decide+Charge", allocs)
	}
	// A request no counting rule matched: Counts false, Charge free.
	rq = get("/", "192.0.2.5")
	decide(t, e, rq)
	allocs = testing.AllocsPerRun(1000, func() {
		res, _ := e.Decide(ctx, rq)
		if res.Counts() {
			t.Fatal("counts")
		}
		_ = res.Charge(ctx, 401, nil)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations for a rule that does not count", allocs)
	}
}

func TestCountValidation(t *testing.T) {
	cases := []struct {
		rule Rule
		path string
		want string
	}{
		{Rule{Name: "a", Count: &Count{}, Policies: oneRate}, "rules[0].count", "names no answer"},
		{Rule{Name: "a", Count: &Count{Statuses: []string{"401", "6xx"}}, Policies: oneRate}, "rules[0].count.statuses[1]", "want a status"},
		{Rule{Name: "a", Count: &Count{Statuses: []string{"599-500"}}, Policies: oneRate}, "rules[0].count.statuses[0]", "ends before"},
		{Rule{Name: "a", Count: &Count{Header: HeaderMatch{Name: "bad name"}}, Policies: oneRate}, "rules[0].count.header.name", "not a header"},
		{Rule{Name: "a", Count: &Count{Header: HeaderMatch{Value: "x"}}, Policies: oneRate}, "rules[0].count.header.value", "without a header name"},
		{Rule{Name: "a", Count: &Count{Statuses: []string{"401"}}, Policies: []Policy{{Algorithm: "leaky_bucket", Rate: "1/s"}}}, "rules[0].policies[0].mode", "cannot delay"},
		{Rule{Name: "a", Count: &Count{Statuses: []string{"401"}}, Policies: []Policy{{Algorithm: AlgConcurrency, Limit: 2}}}, "rules[0].count", "concurrency"},
	}
	for _, c := range cases {
		cfg := Config{Rules: []Rule{c.rule}}
		if err := cfg.Validate(); !hasProblem(err, c.path, c.want) {
			t.Errorf("%+v: got %v, want %s: ...%s", c.rule.Count, err, c.path, c.want)
		}
	}
	ok := Config{Rules: []Rule{{Name: "a", Count: &Count{Statuses: []string{" 4XX", "500-599", "200"}}, Policies: []Policy{{Algorithm: "leaky_bucket", Rate: "1/s", Mode: "police"}}}}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestParseStatusSpec(t *testing.T) {
	for in, want := range map[string]StatusRange{
		"401": {401, 401}, "4xx": {400, 499}, "5XX": {500, 599}, " 500-599 ": {500, 599},
		"100": {100, 100}, "200 - 204": {200, 204},
	} {
		got, err := ParseStatusSpec(in)
		if err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
		if back, err := ParseStatusSpec(got.String()); err != nil || back != got {
			t.Errorf("%q: String %q does not parse back", in, got.String())
		}
	}
	for _, in := range []string{"", "4x", "6xx", "0xx", "099", "600", "40l", "401-", "-401", "401-402-403", "+401", "4_01", strings.Repeat("4", 100)} {
		if r, err := ParseStatusSpec(in); err == nil {
			t.Errorf("%q parsed as %v", in, r)
		}
	}
}

func FuzzStatusSpec(f *testing.F) {
	f.Add("401")
	f.Add("4xx")
	f.Add("500-599")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseStatusSpec(s)
		if err != nil {
			return
		}
		if r.Lo < 100 || r.Hi > 599 || r.Lo > r.Hi {
			t.Fatalf("%q: %v", s, r)
		}
		back, err := ParseStatusSpec(r.String())
		if err != nil || back != r {
			t.Fatalf("%q: %v does not round-trip (%q: %v %v)", s, r, r.String(), back, err)
		}
	})
}

func TestCountDescribe(t *testing.T) {
	for c, want := range map[*Count]string{
		{Statuses: []string{"401", "403"}}:                                 "answers 401, 403",
		{Statuses: []string{"4XX"}, Header: HeaderMatch{Name: "x-failed"}}: "answers 4xx with header X-Failed",
		{Header: HeaderMatch{Name: "X-Result", Value: "fail"}}:             `answers of any status with header X-Result: "fail"`,
	} {
		if got := c.Describe(); got != want {
			t.Errorf("%v: %q, want %q", c, got, want)
		}
	}
}

// hasProblem reports whether the joined error err holds a FieldError at
// path whose message contains want.
func hasProblem(err error, path, want string) bool {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return false
	}
	for _, e := range j.Unwrap() {
		var fe *FieldError
		if errors.As(e, &fe) && fe.Path == path && strings.Contains(fe.Error(), want) {
			return true
		}
	}
	return false
}

// BenchmarkRefusalCounting: the refusal of a key over its limit, by a plain rule, a counting rule
// (a peek instead of a charge) and either with a penalty in force (one
// check, no charge).
func BenchmarkRefusalCounting(b *testing.B) {
	plain := Rule{Name: "login", Match: Match{Paths: []string{"/login"}}, Policies: []Policy{{Algorithm: "fixed_window", Limit: 5, Window: "15m"}}}
	counting := loginRule(5)
	for _, c := range []struct {
		name string
		rule Rule
	}{
		{"plain", plain},
		{"count", counting},
		{"plain-penalty", func() Rule { r := plain; r.Penalty = time.Hour; return r }()},
		{"count-penalty", func() Rule { r := counting; r.Penalty = time.Hour; return r }()},
	} {
		b.Run(c.name, func(b *testing.B) {
			e, _ := newEngine(b, Config{Rules: []Rule{c.rule}})
			rq := get("/login", "192.0.2.77")
			ctx := context.Background()
			for range 6 {
				res, _ := e.Decide(ctx, rq)
				res.Charge(ctx, 401, nil)
			}
			b.ReportAllocs()
			for b.Loop() {
				if res, _ := e.Decide(ctx, rq); !res.Refused() {
					b.Fatal("allowed")
				}
			}
		})
	}
}
