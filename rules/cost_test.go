package rules

import "testing"

func TestCosts(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{{
		Name:     "api",
		Policies: []Policy{{Algorithm: "fixed_window", Limit: 10, Window: "1m"}},
		Cost: Cost{
			Default: 1,
			By: []CostBy{
				{Match: Match{Paths: []string{"/search"}}, Cost: 5},
				{Match: Match{Methods: []string{"POST"}}, Cost: 2},
			},
		},
	}}})
	steps := []struct {
		method, path  string
		wantRemaining int64
		wantOutcome   Outcome
	}{
		{"GET", "/items", 9, Allowed},
		{"GET", "/search", 4, Allowed},
		{"POST", "/items", 2, Allowed},
		{"GET", "/search", 2, Refused},  // costs 5, 2 left: refused, nothing charged
		{"POST", "/search", 2, Refused}, // first match wins: still 5
		{"POST", "/items", 0, Allowed},
	}
	for i, s := range steps {
		r := get(s.path, "192.0.2.1")
		r.method = s.method
		res := decide(t, e, r)
		if res.Outcome != s.wantOutcome || res.Decision.Remaining != s.wantRemaining {
			t.Fatalf("step %d %s %s: %v remaining %d, want %v %d", i, s.method, s.path, res.Outcome, res.Decision.Remaining, s.wantOutcome, s.wantRemaining)
		}
	}
}
