package replay

import (
	"testing"

	"github.com/tollgate-dev/tollgate/rules"
)

// A gateway rule set runs through the gateway's own engine and store, fed
// the log's requests at the log's times: a per-IP token bucket of 1/s,
// burst 20, refuses what the same policy given as a flag refuses (35 on
// the excerpt, by testdata/reference.py), and a rule that matches nothing
// refuses nothing.
func TestRulesAsTheGatewayRunsThem(t *testing.T) {
	cfg := Config{
		Rules: &Rules{Name: "gateway", Config: rules.Config{Rules: []rules.Rule{
			{Name: "per-ip", Key: rules.Key{"ip"}, Policies: []rules.Policy{{Algorithm: "token_bucket", Rate: "1/s", Burst: 20}}},
			{Name: "admin", Match: rules.Match{PathPrefixes: []string{"/admin/"}},
				Policies: []rules.Policy{{Algorithm: "fixed_window", Limit: 1, Window: "1h"}}},
		}}},
		Policies: policies(t, "token_bucket:rate=1/s,burst=20"),
	}
	rep := runFile(t, "testdata/apache_excerpt.log", cfg)
	if len(rep.Policies) != 2 {
		t.Fatalf("%d policies reported, want the rule set and the flag", len(rep.Policies))
	}
	rs, flag := rep.Policies[0], rep.Policies[1]
	if rs.Name != "gateway" || rs.Algorithm != "rules" {
		t.Errorf("rule set reported as %q (%s)", rs.Name, rs.Algorithm)
	}
	if rs.Refused != 35 || flag.Refused != 35 || rs.RefusedBy["per-ip"] != 35 || rs.RefusedBy["admin"] != 0 {
		t.Errorf("rule set refused %d (by rule %v), flag policy %d; want 35 each, all by per-ip",
			rs.Refused, rs.RefusedBy, flag.Refused)
	}
	if rs.StoreErrors != 0 {
		t.Errorf("%d store errors", rs.StoreErrors)
	}
	if len(rs.TopRefused) == 0 || rs.TopRefused[0].Key != "75.97.9.59" || rs.TopRefused[0].FirstRefused != flag.TopRefused[0].FirstRefused {
		t.Errorf("rule set top refused %+v, flag %+v", rs.TopRefused, flag.TopRefused)
	}
}
