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
