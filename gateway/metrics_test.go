package gateway

import (
	"strings"
	"testing"
)

// decisionCount is tollgate_decisions_total for rule, policy and outcome,
// or -1 when the series does not exist.
func decisionCount(g *Gateway, rule, policy, outcome string) float64 {
	mfs, _ := g.core.M.Reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "tollgate_decisions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["rule"] == rule && l["policy"] == policy && l["outcome"] == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

// A refusal counts once, against the rule and policy that refused; the
// other rules the request matched were not charged and say so.
func TestDecisionMetricsCountARefusalAgainstTheRuleThatRefused(t *testing.T) {
	g, base := startTestGateway(t, demoRoute+`rules:
  - name: tight
    policies: [{algorithm: fixed_window, limit: 1, window: 1m}]
  - name: loose
    policies:
      - {name: loose-minute, algorithm: fixed_window, limit: 1000, window: 1m}
      - {name: loose-hour, algorithm: fixed_window, limit: 5000, window: 1h}
`)
	for i := range 4 {
		code, _, h := get(t, base+"/", "")
		if want := 429; i > 0 && code != want {
			t.Fatalf("request %d: %d, want %d", i, code, want)
		}
		if i > 0 && !strings.Contains(h.Get("RateLimit"), `"tight"`) {
			t.Fatalf("request %d: refusal names %q, want tight", i, h.Get("RateLimit"))
		}
	}
	for _, c := range []struct {
		rule, policy, outcome string
		want                  float64
	}{
		{"tight", "tight", "allowed", 1},
		{"tight", "tight", "refused", 3},
		{"tight", "tight", "not_charged", 0},
		{"loose", "loose-minute", "allowed", 1},
		{"loose", "loose-minute", "refused", 0},
		{"loose", "loose-minute", "not_charged", 3},
		{"loose", "loose-hour", "refused", 0},
		{"loose", "loose-hour", "not_charged", 0},
	} {
		if got := decisionCount(g, c.rule, c.policy, c.outcome); got != c.want {
			t.Errorf("decisions{rule=%q,policy=%q,outcome=%q} = %v, want %v", c.rule, c.policy, c.outcome, got, c.want)
		}
	}
	var refused float64
	for _, r := range [][2]string{{"tight", "tight"}, {"loose", "loose-minute"}, {"loose", "loose-hour"}} {
		refused += max(decisionCount(g, r[0], r[1], "refused"), 0)
	}
	if refused != 3 {
		t.Errorf("refusals counted %v times, want 3 (once each)", refused)
	}
}
