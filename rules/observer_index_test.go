package rules

import "testing"

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
