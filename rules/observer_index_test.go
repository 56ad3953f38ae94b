package rules

import (
	"maps"
	"slices"
	"testing"
)

// An event names its rule's position in Config.Rules, shadow rules
// included, whatever order the engine charges them in.
func TestEventRuleIndex(t *testing.T) {
	obs := &events{}
	e, _ := newEngine(t, Config{Observer: obs, Rules: []Rule{
		{Name: "shadow", Shadow: true, Policies: oneRate},
		{Name: "other", Match: Match{PathPrefixes: []string{"/nowhere/"}}, Policies: oneRate},
		{Name: "per-ip", Policies: oneRate},
	}})
	decide(t, e, get("/", "192.0.2.1"))
	want := map[string]int{"shadow": 0, "per-ip": 2}
	if len(obs.list) != 2 {
		t.Fatalf("events %+v", obs.list)
	}
	for _, ev := range obs.list {
		if ev.RuleIndex != want[ev.Rule] {
			t.Errorf("%s: RuleIndex %d, want %d", ev.Rule, ev.RuleIndex, want[ev.Rule])
		}
	}
}

// An event's PolicyIndex finds its policy in PolicyNames, for a tier's
// plans as for a rule's own policies, and a refusal is reported once:
// against the policy that refused, the other rules not charged.
func TestEventPolicyIndexNamesThePolicyThatRefused(t *testing.T) {
	obs := &events{}
	e, _ := newEngine(t, Config{Observer: obs, Rules: []Rule{
		{Name: "wide", Policies: []Policy{{Algorithm: "fixed_window", Limit: 100, Window: "1m"}}},
		{Name: "api", Key: Key{"header:X-Key"}, Tiers: &Tiers{
			Default: "free",
			Plans: map[string][]Policy{
				"pro":  {{Algorithm: "fixed_window", Limit: 100, Window: "1m"}},
				"free": {{Algorithm: "fixed_window", Limit: 50, Window: "1m"}, {Name: "burst", Algorithm: "fixed_window", Limit: 1, Window: "1m"}},
			},
		}},
	}})
	if got := e.PolicyNames(1); !slices.Equal(got, []string{"api-free", "burst", "api-pro"}) {
		t.Fatalf("PolicyNames(1) = %v", got)
	}
	if got := e.PolicyNames(0); !slices.Equal(got, []string{"wide"}) {
		t.Fatalf("PolicyNames(0) = %v", got)
	}
	if e.PolicyNames(2) != nil || e.PolicyNames(-1) != nil {
		t.Fatal("PolicyNames out of range is not nil")
	}
	r := get("/", "192.0.2.1").with("X-Key", "k1")
	decide(t, e, r)
	obs.list = nil
	if res := decide(t, e, r); res.Outcome != Refused {
		t.Fatalf("second request: %v", res.Outcome)
	}
	var got []string
	for _, ev := range obs.list {
		name := e.PolicyNames(ev.RuleIndex)[ev.PolicyIndex]
		if name != ev.Policy {
			t.Errorf("%s: PolicyIndex %d names %q, Policy is %q", ev.Rule, ev.PolicyIndex, name, ev.Policy)
		}
		got = append(got, ev.Rule+"/"+ev.Policy+":"+ev.Outcome.String())
	}
	if want := []string{"wide/wide:not_charged", "api/burst:refused"}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

// An event carries the request's key value under its rule, without the
// store key's rule and policy prefix: the client IP for the default key,
// the header's value for a header key, even for a tier's plan.
func TestEventKeyIsTheRulesKeyValue(t *testing.T) {
	obs := &events{}
	e, _ := newEngine(t, Config{Observer: obs, Rules: []Rule{
		{Name: "per-ip", Policies: oneRate},
		{Name: "api", Key: Key{"header:X-Key"}, Tiers: &Tiers{
			Default: "free",
			Plans:   map[string][]Policy{"free": oneRate},
		}},
	}})
	decide(t, e, get("/", "192.0.2.7").with("X-Key", "k1"))
	got := map[string]string{}
	for _, ev := range obs.list {
		got[ev.Rule] = ev.Key
	}
	if want := map[string]string{"per-ip": "192.0.2.7", "api": "k1"}; !maps.Equal(got, want) {
		t.Fatalf("keys %q, want %q", got, want)
	}
}
