package replay

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/rules"
)

// Policy is one policy to simulate, with the name reports show for it.
type Policy struct {
	// Name labels the policy in reports; empty means Policy.String().
	Name string
	// Policy is the algorithm and its parameters, exactly as a store would
	// apply it.
	Policy limit.Policy
}

// label returns the report name.
func (p Policy) label() string {
	if p.Name != "" {
		return p.Name
	}
	return p.Policy.String()
}

// ParsePolicy reads a -policy value: ALGORITHM:KEY=VALUE,... with the
// keys a policy has in the gateway's file (rules.ParsePolicySpec):
//
//	fixed_window, sliding_log, sliding_window: limit=N, window=PERIOD
//	    (or rate=N/PERIOD for both at once)
//	token_bucket: rate=N/PERIOD, burst=N (default: the rate's count)
//	leaky_bucket: rate=N/PERIOD, burst=N, mode=shape|police, delay=N
//
// and an optional name=LABEL. The policy is judged by the rule engine's
// own converter (rules.Policy.ToLimit), so the simulator accepts exactly
// the policies the gateway accepts. Examples:
// "token_bucket:rate=10/s,burst=20", "sliding_window:limit=100,window=1m".
func ParsePolicy(s string) (Policy, error) {
	rp, err := rules.ParsePolicySpec(s)
	if err != nil {
		return Policy{}, fmt.Errorf("policy %q: %w", s, err)
	}
	lp, err := rp.ToLimit()
	if err != nil {
		return Policy{}, fmt.Errorf("policy %q: %w", s, err)
	}
	return Policy{Name: rp.Name, Policy: lp}, nil
}
