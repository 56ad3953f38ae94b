package rules

import (
	"strings"
	"testing"
)

func tieredConfig(t *testing.T) Config {
	t.Helper()
	fileMembers, err := ParsePlanMap("plans.txt", strings.NewReader("# API keys and their plans\nkey-pro pro\n\nkey-ent\tenterprise\nkey-both free\n"))
	if err != nil {
		t.Fatal(err)
	}
	return Config{Rules: []Rule{{
		Name: "api",
		Key:  Key{"header:X-API-Key"},
		Tiers: &Tiers{
			Plans: map[string][]Policy{
				"free":       {{Algorithm: "fixed_window", Limit: 1, Window: "1m"}},
				"pro":        {{Algorithm: "fixed_window", Limit: 3, Window: "1m"}},
				"enterprise": {{Algorithm: "fixed_window", Limit: 5, Window: "1m"}},
			},
			Members:     map[string]string{"key-both": "pro"}, // wins over the file
			FileMembers: fileMembers,
			Default:     "free",
		},
	}}}
}

func TestTiers(t *testing.T) {
	e, _ := newEngine(t, tieredConfig(t))
	allowed := func(key string) int {
		n := 0
		for i := 0; i < 10; i++ {
			res := decide(t, e, get("/", "192.0.2.1").with("X-API-Key", key))
			if res.Outcome == Allowed {
				n++
			}
		}
		return n
	}
	for key, want := range map[string]int{"key-pro": 3, "key-ent": 5, "key-both": 3, "unknown-key": 1} {
		if got := allowed(key); got != want {
			t.Errorf("%s: %d allowed, want %d", key, got, want)
		}
	}
	res := decide(t, e, get("/", "192.0.2.1").with("X-API-Key", "key-ent"))
	h := headers(&res)
	if h[HeaderRateLimitPolicy] != `"api-enterprise";q=5;w=60` {
		t.Errorf("policy header %q", h[HeaderRateLimitPolicy])
	}
}

func TestTierIdentityDiffersFromKey(t *testing.T) {
	// Counted per IP, plan chosen by a header.
	e, _ := newEngine(t, Config{Rules: []Rule{{
		Name: "ip-by-plan",
		Tiers: &Tiers{
			Identity: Key{"header:X-Plan-Token"},
			Plans: map[string][]Policy{
				"free": {{Algorithm: "fixed_window", Limit: 1, Window: "1m"}},
				"pro":  {{Algorithm: "fixed_window", Limit: 2, Window: "1m"}},
			},
			Members: map[string]string{"gold": "pro"},
			Default: "free",
		},
	}}})
	n := 0
	for i := 0; i < 4; i++ {
		if decide(t, e, get("/", "192.0.2.9").with("X-Plan-Token", "gold")).Outcome == Allowed {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("pro by token: %d allowed, want 2", n)
	}
	if decide(t, e, get("/", "192.0.2.10")).Outcome != Allowed || decide(t, e, get("/", "192.0.2.10")).Outcome != Refused {
		t.Fatal("no token: want the free plan")
	}
}

func TestParsePlanMap(t *testing.T) {
	m, err := ParsePlanMap("plans.json", strings.NewReader(`{"a":"free","b":"pro"}`))
	if err != nil || m["a"] != "free" || m["b"] != "pro" {
		t.Fatalf("%v %v", m, err)
	}
	if _, err := ParsePlanMap("bad.txt", strings.NewReader("secret-key free extra\n")); err == nil || !strings.Contains(err.Error(), "bad.txt:1") || strings.Contains(err.Error(), "secret-key") {
		t.Fatalf("error %v: want the line, not the identity", err)
	}
	if _, err := ParsePlanMap("dup.txt", strings.NewReader("k free\nk pro\n")); err == nil || !strings.Contains(err.Error(), "dup.txt:2") {
		t.Fatalf("error %v", err)
	}
	if m, err := ParsePlanMap("empty.txt", strings.NewReader("# none\n")); err != nil || m == nil {
		t.Fatalf("an empty file: %v, %v; want an empty map", m, err)
	}
}

// TestTierLongIdentity: an API key longer than MaxKeyLength is hashed in
// store keys, and still finds its plan.
func TestTierLongIdentity(t *testing.T) {
	long := strings.Repeat("K", 300)
	e, _ := newEngine(t, Config{Rules: []Rule{{
		Name: "api", Key: Key{"header:X-API-Key"},
		Tiers: &Tiers{
			Plans: map[string][]Policy{
				"free": {{Algorithm: "fixed_window", Limit: 1, Window: "1m"}},
				"pro":  {{Algorithm: "fixed_window", Limit: 3, Window: "1m"}},
			},
			Members: map[string]string{long: "pro"},
			Default: "free",
		},
	}}})
	res := decide(t, e, get("/", "192.0.2.1").with("X-API-Key", long))
	if res.Decision.Limit != 3 {
		t.Fatalf("limit %d, want the pro plan's 3", res.Decision.Limit)
	}
}
