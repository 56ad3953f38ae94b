package rules

import (
	"testing"
	"time"
)

func TestIPRuleAllowsThenRefuses(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{{
		Name:     "per-ip",
		Policies: []Policy{{Algorithm: "fixed_window", Limit: 3, Window: "1m"}},
	}}})
	for i := 0; i < 3; i++ {
		res := decide(t, e, get("/", "192.0.2.1"))
		if res.Outcome != Allowed || res.Decision.Remaining != int64(2-i) {
			t.Fatalf("request %d: outcome %v remaining %d", i, res.Outcome, res.Decision.Remaining)
		}
	}
	res := decide(t, e, get("/", "192.0.2.1"))
	if res.Outcome != Refused || !res.Refused() {
		t.Fatalf("4th request: outcome %v", res.Outcome)
	}
	if res.Rule() != "per-ip" || res.Policy() != "per-ip" {
		t.Fatalf("rule %q policy %q", res.Rule(), res.Policy())
	}
	// Another client has its own counter.
	if res := decide(t, e, get("/", "192.0.2.2")); res.Outcome != Allowed {
		t.Fatalf("other client: %v", res.Outcome)
	}
}

func TestNoRulesAllowsEverything(t *testing.T) {
	e, _ := newEngine(t, Config{})
	res := decide(t, e, get("/", "192.0.2.1"))
	if res.Outcome != Allowed || res.Matched() || len(res.AppendHeaders(nil)) != 0 {
		t.Fatalf("got %+v", res)
	}
}

func TestDelayCappedByMaxDelay(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{{
		Name:     "shape",
		MaxDelay: 150 * time.Millisecond,
		Policies: []Policy{{Algorithm: "leaky_bucket", Rate: "10/s", Burst: 5}},
	}}})
	var delays []time.Duration
	for i := 0; i < 4; i++ {
		res := decide(t, e, get("/", "192.0.2.1"))
		delays = append(delays, res.Delay)
	}
	want := []time.Duration{0, 100 * time.Millisecond, 150 * time.Millisecond, 150 * time.Millisecond}
	for i := range want {
		if delays[i] != want[i] {
			t.Fatalf("delays %v, want %v", delays, want)
		}
	}
}

// TestMultiPolicyAllOrNothing: when one of several matching rules refuses,
// none is charged (nginx's rule), and the refusal names the violated one.
func TestMultiPolicyAllOrNothing(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{
		{Name: "global", Policies: []Policy{{Algorithm: "fixed_window", Limit: 10, Window: "1m"}}},
		{Name: "login", Match: Match{Paths: []string{"/login"}}, Policies: []Policy{{Algorithm: "fixed_window", Limit: 1, Window: "1m"}}},
	}})
	decide(t, e, get("/login", "192.0.2.1")) // global 9, login 0
	res := decide(t, e, get("/login", "192.0.2.1"))
	if res.Outcome != Refused || res.Rule() != "login" {
		t.Fatalf("second login: %v by %q", res.Outcome, res.Rule())
	}
	if vp := res.AppendViolatedPolicies(nil); len(vp) != 1 || vp[0] != "login" {
		t.Fatalf("violated %v", vp)
	}
	// The refused login did not charge the global rule.
	if res := decide(t, e, get("/other", "192.0.2.1")); res.Decision.Remaining != 8 {
		t.Fatalf("global remaining %d, want 8", res.Decision.Remaining)
	}
}

// TestNginxDelayTable replays the worked example of nginx limit_req
// (rate=10r/s burst=5, seven requests at one instant) for the default,
// nodelay and delay=3.
func TestNginxDelayTable(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		policy Policy
		want   []time.Duration // -1: refused
	}{
		{"default", Policy{Algorithm: "leaky_bucket", Rate: "10/s", Burst: 5}, []time.Duration{0, 100 * ms, 200 * ms, 300 * ms, 400 * ms, 500 * ms, -1}},
		{"nodelay", Policy{Algorithm: "leaky_bucket", Rate: "10/s", Burst: 5, Mode: "nodelay"}, []time.Duration{0, 0, 0, 0, 0, 0, -1}},
		{"delay=3", Policy{Algorithm: "leaky_bucket", Rate: "10/s", Burst: 5, Delay: 3}, []time.Duration{0, 0, 0, 0, 100 * ms, 200 * ms, -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := newEngine(t, Config{Rules: []Rule{{Name: "lb", Policies: []Policy{tt.policy}}}})
			for i, want := range tt.want {
				res := decide(t, e, get("/", "192.0.2.1"))
				got := res.Delay
				if res.Outcome == Refused {
					got = -1
				}
				if wantOut := map[bool]Outcome{true: Delayed, false: Allowed}[want > 0]; want >= 0 && res.Outcome != wantOut {
					t.Fatalf("request %d: outcome %v, want %v", i+1, res.Outcome, wantOut)
				}
				if got != want {
					t.Fatalf("request %d: delay %v, want %v", i+1, got, want)
				}
			}
		})
	}
}

func TestDecideAllocatesNothingForAllowedIPRequest(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{{
		Name:     "per-ip",
		Policies: []Policy{{Rate: "1000000/s"}},
	}}})
	r := get("/items/1", "192.0.2.1")
	n := allowedAllocs(t, e, r)
	if n != 0 {
		t.Fatalf("%v allocs per allowed request, want 0", n)
	}
	// Headers: one allocation for all per-request values.
	res := decide(t, e, r)
	var buf [8]Header
	n = testing.AllocsPerRun(1000, func() { res.AppendHeaders(buf[:0]) })
	if n != 1 {
		t.Fatalf("%v allocs for the headers, want 1", n)
	}
}

func TestDecideAllocatesNothingForTwoPolicies(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{
		{Name: "per-ip", Policies: []Policy{{Rate: "1000000/s"}, {Algorithm: "sliding_window", Rate: "100000000/h"}}},
		{Name: "v6", Key: Key{"ip", "method"}, Policies: []Policy{{Rate: "1000000/s"}}},
	}})
	r := get("/items/1", "2001:db8::7")
	n := allowedAllocs(t, e, r)
	if n != 0 {
		t.Fatalf("%v allocs, want 0", n)
	}
}

// A delay is capped by the max_delay of the rule that shapes, even when
// another rule has fewer requests left.
func TestMaxDelayOfTheShapingRule(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{
		{Name: "shaped", MaxDelay: time.Second,
			Policies: []Policy{{Algorithm: "leaky_bucket", Rate: "1/s", Burst: 100}}},
		{Name: "tight", Policies: []Policy{{Rate: "1/h", Burst: 10}}},
	}})
	var res Result
	for range 6 {
		res = decide(t, e, get("/", "192.0.2.1"))
	}
	// The headers report tight, the rule with the fewest requests left;
	// the wait is capped by shaped, the rule that delays.
	if res.Outcome != Delayed || res.Delay != time.Second || res.Rule() != "tight" {
		t.Errorf("outcome %v, delay %v, rule %q: want delayed 1s (shaped's max_delay), decided by tight", res.Outcome, res.Delay, res.Rule())
	}
}
