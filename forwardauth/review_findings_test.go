//go:build review

// Findings of the issue-26 review (branch h-review): fail today, pass
// once the proposed fix lands. go test -tags review -run TestReview ./forwardauth/
package forwardauth

import (
	"testing"

	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// TestReviewNewRefusesJA4: forward-auth never sees the client's TLS
// handshake (the original request has no fingerprint), so a ja4-keyed
// rule never applies and a ja4 matcher never matches: the operator's
// botnet limit silently limits nothing. New refuses counting rules for
// the same kind of reason; it should refuse these too.
func TestReviewNewRefusesJA4(t *testing.T) {
	ms, err := memory.New(memory.Config{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	for _, r := range []rules.Rule{
		{Name: "per-ja4", Key: rules.Key{"ja4"}, Policies: []rules.Policy{{Rate: "5/s"}}},
		{Name: "one-stack", Match: rules.Match{JA4: []string{"t13d1516h2_8daaf6152771_e5627efa2ab1"}}, Policies: []rules.Policy{{Rate: "5/s"}}},
	} {
		e, err := rules.New(rules.Config{Rules: []rules.Rule{r}}, ms)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(e, Config{TrustedProxies: []string{proxy}}); err == nil {
			t.Errorf("rule %q: New accepted a rule that can never apply behind forward-auth (no TLS fingerprint)", r.Name)
		}
	}
}
