package forwardauth

import (
	"errors"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// Forward-auth never sees the client's TLS handshake (the original
// request has no fingerprint), so a ja4-keyed rule never applies and a
// ja4 matcher never matches: New and CheckRules refuse every such rule
// (ErrJA4), wherever it reads the fingerprint, and accept the same rule
// without it.
func TestNewRefusesJA4(t *testing.T) {
	ms, err := memory.New(memory.Config{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	const fp = "t13d1516h2_8daaf6152771_e5627efa2ab1"
	rate := []rules.Policy{{Rate: "5/s"}}
	for _, c := range []struct {
		name, at string
		cfg      rules.Config
	}{
		{"key", "key[1]", rules.Config{Rules: []rules.Rule{{Name: "r", Key: rules.Key{"ip", "ja4"}, Policies: rate}}}},
		{"match", "match.ja4", rules.Config{Rules: []rules.Rule{{Name: "r", Match: rules.Match{JA4: []string{fp}}, Policies: rate}}}},
		{"except matcher", "except[0].ja4", rules.Config{Rules: []rules.Rule{{Name: "r", Except: []rules.Except{{Match: rules.Match{JA4: []string{fp}}}}, Policies: rate}}}},
		{"except key list", "except[0].key", rules.Config{Rules: []rules.Rule{{Name: "r", Except: []rules.Except{{Key: "ja4", Keys: []string{fp}}}, Policies: rate}}}},
		{"cost.by", "cost.by[0].match.ja4", rules.Config{Rules: []rules.Rule{{Name: "r", Cost: rules.Cost{By: []rules.CostBy{{Match: rules.Match{JA4: []string{fp}}, Cost: 5}}}, Policies: rate}}}},
		{"tiers identity", "tiers.identity[0]", rules.Config{Rules: []rules.Rule{{Name: "r", Tiers: &rules.Tiers{Identity: rules.Key{"ja4"},
			Plans: map[string][]rules.Policy{"free": rate}, Default: "free"}}}}},
		{"shadow", "key[0]", rules.Config{Rules: []rules.Rule{{Name: "r", Shadow: true, Key: rules.Key{"ja4"}, Policies: rate}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := rules.New(c.cfg, ms)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := New(e, Config{TrustedProxies: []string{proxy}}); !errors.Is(err, ErrJA4) || !strings.Contains(err.Error(), `"r"`) {
				t.Errorf("New: %v; want ErrJA4 naming the rule", err)
			}
			err = CheckRules(c.cfg.Rules)
			if !errors.Is(err, ErrJA4) || !strings.Contains(err.Error(), `"r", `+c.at) {
				t.Errorf("CheckRules: %v; want ErrJA4 at %s", err, c.at)
			}
		})
	}

	// The top-level except: New refuses it (CheckRules sees only rules).
	top := rules.Config{Except: []rules.Except{{Match: rules.Match{JA4: []string{fp}}}}, Rules: []rules.Rule{{Name: "r", Policies: rate}}}
	if at, ok := top.JA4Use(); !ok || at != "except[0].ja4" {
		t.Errorf("Config.JA4Use = %q, %v; want except[0].ja4", at, ok)
	}
	e, err := rules.New(top, ms)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(e, Config{TrustedProxies: []string{proxy}}); !errors.Is(err, ErrJA4) {
		t.Errorf("New with a ja4 matcher in the top-level except: %v; want ErrJA4", err)
	}

	// The same rules without ja4 are served.
	plain := rules.Config{Rules: []rules.Rule{{Name: "r", Key: rules.Key{"ip", "header:X-API-Key"},
		Match:  rules.Match{Paths: []string{"/login"}},
		Except: []rules.Except{{Match: rules.Match{Clients: []string{"10.0.0.0/8"}}}},
		Cost:   rules.Cost{By: []rules.CostBy{{Match: rules.Match{Methods: []string{"POST"}}, Cost: 5}}}, Policies: rate}}}
	if at, ok := plain.JA4Use(); ok {
		t.Errorf("Config.JA4Use = %q on a configuration without ja4", at)
	}
	if e, err = rules.New(plain, ms); err != nil {
		t.Fatal(err)
	}
	if _, err := New(e, Config{TrustedProxies: []string{proxy}}); err != nil {
		t.Errorf("New refused rules without ja4: %v", err)
	}
	if err := CheckRules(plain.Rules); err != nil {
		t.Errorf("CheckRules refused rules without ja4: %v", err)
	}
}
