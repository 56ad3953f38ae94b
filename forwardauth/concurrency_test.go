package forwardauth

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// oneInFlight limits /api/ to one request in flight per client IP.
func oneInFlight() rules.Config {
	return rules.Config{
		ClientIP: rules.ClientIP{TrustedProxies: []string{proxy}},
		Rules: []rules.Rule{{
			Name:     "one-at-a-time",
			Match:    rules.Match{PathPrefixes: []string{"/api/"}},
			Policies: []rules.Policy{{Algorithm: rules.AlgConcurrency, Limit: 1}},
		}},
	}
}

func concurrencyEngine(t *testing.T) *rules.Engine {
	t.Helper()
	ms, err := memory.New(memory.Config{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	rc := oneInFlight()
	rc.Slots = memory.NewSlots()
	e, err := rules.New(rc, ms)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// An auth subrequest ends before the request it asks about, so a slot
// held from the decision would be held for nothing and never given back:
// New refuses an engine with a concurrency policy, naming the rule.
func TestNewRefusesConcurrencyPolicies(t *testing.T) {
	_, err := New(concurrencyEngine(t), Config{TrustedProxies: []string{proxy}})
	if !errors.Is(err, ErrConcurrency) || !strings.Contains(err.Error(), `"one-at-a-time"`) {
		t.Fatalf("New: %v; want ErrConcurrency naming the rule", err)
	}
}

// An engine swapped in with a concurrency policy (Swap cannot refuse
// it) gives back each slot once the answer is written: sequential auth
// requests are never refused, where before the first one's slot was
// held forever and every later request of the key was refused.
func TestSwappedConcurrencyPolicyReleasesAtAnswer(t *testing.T) {
	h := newHandler(t, twoPerMinute(), nil, Config{})
	h.Swap(concurrencyEngine(t))
	fields := map[string]string{"X-Original-Method": "GET", "X-Original-Uri": "/api/x", "X-Forwarded-For": "192.0.2.7"}
	for i := range 5 {
		if w := ask(h, proxy, "/auth/nginx", fields); w.Code != http.StatusOK {
			t.Fatalf("auth request %d: %d %s; want 200 (the slot of the one before released)", i+1, w.Code, w.Header())
		}
	}
}

// forward-auth never sees the origin's answer: a rule that counts on it
// is refused, naming the rule, as a concurrency policy is.
func TestCheckRulesRefusesCounting(t *testing.T) {
	rs := []rules.Rule{
		{Name: "per-ip", Policies: []rules.Policy{{Rate: "10/s"}}},
		{Name: "failed-logins", Count: &rules.Count{Statuses: []string{"401"}}, Policies: []rules.Policy{{Rate: "5/15m"}}},
	}
	err := CheckRules(rs)
	if !errors.Is(err, ErrCount) || !strings.Contains(err.Error(), `"failed-logins"`) {
		t.Fatalf("CheckRules: %v; want ErrCount naming the rule", err)
	}
	if err := CheckRules(rs[:1]); err != nil {
		t.Fatalf("CheckRules without count: %v", err)
	}
}

// New refuses an engine with a counting rule, naming it.
func TestNewRefusesCounting(t *testing.T) {
	ms, err := memory.New(memory.Config{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	e, err := rules.New(rules.Config{Rules: []rules.Rule{{Name: "failed-logins", Count: &rules.Count{Statuses: []string{"401"}},
		Policies: []rules.Policy{{Rate: "5/15m"}}}}}, ms)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(e, Config{TrustedProxies: []string{proxy}}); !errors.Is(err, ErrCount) || !strings.Contains(err.Error(), `"failed-logins"`) {
		t.Fatalf("New: %v; want ErrCount naming the rule", err)
	}
}
