package rules

import (
	"errors"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/limit"
)

func TestZeroConfigIsValid(t *testing.T) {
	var c Config
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestValidateReportsEveryProblemWithItsPath checks that all problems come
// at once, each a *FieldError whose message starts with the field's path.
func TestValidateReportsEveryProblemWithItsPath(t *testing.T) {
	c := Config{
		MaxKeyLength: -1,
		OnError:      "explode",
		ClientIP:     ClientIP{TrustedProxies: []string{"10.0.0.0/99"}},
		Headers:      Headers{Styles: []string{"draft99"}, Reset: "sometimes"},
		Refusal:      Refusal{Status: 200, Body: "{{.Nope"},
		Rules: []Rule{
			{Name: "ok", Policies: []Policy{{Rate: "0/s"}}},
			{Name: "ok", Policies: []Policy{{Rate: "1/s", Burst: -3}}},
			{Name: "bad name!", Policies: []Policy{{Algorithm: "gcra", Rate: "1/s"}}},
			{Name: "nothing"},
			{Name: "both", Policies: oneRate, Tiers: &Tiers{Default: "x"}},
			{Name: "m", Match: Match{Methods: []string{"G T"}, Paths: []string{"x"}, Patterns: []string{"/a/{"}}, Key: Key{"cookie:x"}, Policies: oneRate},
			{Name: "tiers", Tiers: &Tiers{Plans: map[string][]Policy{"free": {{Rate: "1/s"}}}, Default: "gold", Members: map[string]string{"secret-key": "platinum"}, MembersFile: "/nonexistent/plans.txt"}}, // not read: no problem,
			{Name: "lb", Policies: []Policy{{Algorithm: "leaky_bucket", Rate: "1/s", Burst: 1, Delay: 2}, {Algorithm: "fixed_window", Limit: 5}}},
			{Name: "cost", Policies: oneRate, Cost: Cost{Default: -1, By: []CostBy{{Cost: 0}}}},
		},
	}
	err := c.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatal("not ErrInvalidConfig")
	}
	if !errors.Is(err, limit.ErrInvalidRate) || !errors.Is(err, limit.ErrUnknownAlgorithm) || !errors.Is(err, limit.ErrInvalidPolicy) {
		t.Error("underlying limit errors are not wrapped")
	}
	wantPaths := []string{
		"max_key_length", "on_error", "client_ip.trusted_proxies[0]",
		"headers.styles[0]", "headers.reset", "refusal.status", "refusal.body",
		"rules[0].policies[0].rate", "rules[1].name", "rules[1].policies[0]",
		"rules[2].name", "rules[2].policies[0].algorithm", "rules[3]", "rules[4]",
		"rules[5].match.methods[0]", "rules[5].match.paths[0]", "rules[5].match.patterns[0]", "rules[5].key[0]",
		"rules[6].tiers.default", "rules[6].tiers.members",
		"rules[7].policies[0]", "rules[7].policies[1]",
		"rules[8].cost.default", "rules[8].cost.by[0].cost",
	}
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("%v is not a *FieldError", e)
		}
		if !strings.HasPrefix(e.Error(), fe.Path+": ") {
			t.Errorf("%q does not start with its path", e.Error())
		}
		if strings.Contains(e.Error(), "secret-key") {
			t.Errorf("%q leaks an identity", e)
		}
		got = append(got, fe.Path)
	}
	for _, p := range wantPaths {
		found := false
		for _, g := range got {
			found = found || g == p
		}
		if !found {
			t.Errorf("no problem at %s", p)
		}
	}
	if t.Failed() {
		t.Logf("all problems:\n%v", err)
	}
}

func TestPolicySpellings(t *testing.T) {
	tests := []struct {
		p    Policy
		want string
	}{
		{Policy{Rate: "100/m"}, "token_bucket(rate=100/m, burst=100)"},
		{Policy{Algorithm: "token_bucket", Rate: "10/s", Burst: 20}, "token_bucket(rate=10/s, burst=20)"},
		{Policy{Algorithm: "leaky_bucket", Rate: "10r/s", Burst: 5, Delay: 3}, "leaky_bucket(rate=10/s, burst=5, mode=shape, delay=3)"},
		{Policy{Algorithm: "leaky_bucket", Rate: "10/s", Burst: 5, Mode: "nodelay"}, "leaky_bucket(rate=10/s, burst=5, mode=police)"},
		{Policy{Algorithm: "fixed_window", Limit: 100, Window: "1m"}, "fixed_window(limit=100, window=1m)"},
		{Policy{Algorithm: "sliding_window", Rate: "7/90s"}, "sliding_window(limit=7, window=1m30s)"},
		{Policy{Algorithm: "sliding_log", Limit: 10, Window: "7d"}, "sliding_log(limit=10, window=7d)"},
	}
	for _, tt := range tests {
		lp, _, err := tt.p.toLimit()
		if err != nil {
			t.Errorf("%+v: %v", tt.p, err)
			continue
		}
		if lp.String() != tt.want {
			t.Errorf("%+v: %s, want %s", tt.p, lp, tt.want)
		}
	}
	for _, bad := range []Policy{
		{},
		{Algorithm: "token_bucket", Limit: 5},
		{Algorithm: "token_bucket", Rate: "1/s", Mode: "shape"},
		{Algorithm: "fixed_window", Rate: "1/s", Limit: 5},
		{Algorithm: "fixed_window", Limit: 5, Window: "1m", Burst: 3},
		{Algorithm: "leaky_bucket", Rate: "1/s", Mode: "wobble"},
		{Algorithm: "leaky_bucket", Rate: "1/s", Burst: 5, Delay: 2, Mode: "police"},
		{Algorithm: "sliding_log", Limit: limit.MaxLogLimit + 1, Window: "1m"},
		{Algorithm: "fixed_window", Limit: 5, Window: "soon"},
	} {
		if _, _, err := bad.toLimit(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
