package replay

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/limit"
)

func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]limit.Policy{
		"token_bucket:rate=10/s,burst=20":                     limit.TokenBucket{Rate: limit.Per(10, 1e9), Burst: 20},
		"token_bucket:rate=5/m":                               limit.TokenBucket{Rate: limit.Per(5, 60e9)},
		"sliding_window:limit=100,window=1m":                  limit.SlidingWindow{Limit: 100, Window: 60e9},
		"sliding_log:limit=3,window=90s":                      limit.SlidingLog{Limit: 3, Window: 90e9},
		"fixed_window:rate=7/90s":                             limit.FixedWindow{Limit: 7, Window: 90e9},
		"leaky_bucket:rate=2/s,burst=4,mode=police":           limit.LeakyBucket{Rate: limit.Per(2, 1e9), Burst: 4, Mode: limit.Police},
		"leaky_bucket:rate=2/s,burst=4,delay=1":               limit.LeakyBucket{Rate: limit.Per(2, 1e9), Burst: 4, Delay: 1},
		" fixed_window : limit = 1 , window = 1s , name = x ": limit.FixedWindow{Limit: 1, Window: 1e9},
	} {
		got, err := ParsePolicy(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got.Policy != want {
			t.Errorf("%q: %#v, want %#v", in, got.Policy, want)
		}
	}
	for in, wantErr := range map[string]error{
		"bucket:rate=1/s":                       limit.ErrUnknownAlgorithm,
		"token_bucket:rate=0/s":                 limit.ErrInvalidRate,
		"token_bucket:burst=-1,rate=1/s":        limit.ErrInvalidPolicy,
		"sliding_log:limit=20000,window=1m":     limit.ErrInvalidPolicy,
		"leaky_bucket:rate=1/s,burst=1,delay=2": limit.ErrInvalidPolicy,
		"fixed_window:limit=10":                 nil,
		"fixed_window:limit=x,window=1m":        nil,
		"token_bucket:rate=1/s,color=red":       nil,
		"token_bucket":                          nil,
	} {
		_, err := ParsePolicy(in)
		if err == nil {
			t.Errorf("%q accepted", in)
			continue
		}
		if wantErr != nil && !errors.Is(err, wantErr) {
			t.Errorf("%q: %v, want %v", in, err, wantErr)
		}
	}
	// Suggested policies are written back in the same syntax.
	for _, p := range []limit.Policy{
		limit.FixedWindow{Limit: 7, Window: 90e9},
		limit.TokenBucket{Rate: limit.Per(10, 1e9), Burst: 3},
		limit.LeakyBucket{Rate: limit.Per(1, 60e9), Burst: 2, Mode: limit.Shape, Delay: 1},
	} {
		back, err := ParsePolicy(policyFlag(p))
		if err != nil || back.Policy != p {
			t.Errorf("%v → %q → %v, %v", p, policyFlag(p), back.Policy, err)
		}
	}
}

// TestPoliciesAgreeWithTheGateway: a policy string that tollgate replay
// accepts is a policy the gateway's file accepts, and one it refuses the
// file refuses, since both go through the rule engine's one converter.
// Each spec is written as a YAML policy, key for key, and given to
// config.Parse.
func TestPoliciesAgreeWithTheGateway(t *testing.T) {
	for _, spec := range []string{
		"token_bucket:rate=10/s,burst=20",
		"token_bucket:rate=5/m",
		"sliding_window:limit=100,window=1m",
		"sliding_log:limit=3,window=90s",
		"fixed_window:rate=7/90s",
		"leaky_bucket:rate=2/s,burst=4,mode=police",
		"leaky_bucket:rate=2/s,burst=4,mode=nodelay",
		"leaky_bucket:rate=2/s,burst=4,delay=1",
		"fixed_window:limit=1,window=1s,name=x",
		// Accepted by the simulator's own parser before there was one
		// converter, refused by the gateway:
		"leaky_bucket:rate=1/s,burst=5,mode=police,delay=3",
		"fixed_window:rate=10/s,limit=20",
		"sliding_window:rate=10/s,window=1m",
		"token_bucket:rate=1/s,mode=shape",
		"token_bucket:rate=1/s,delay=1",
		"fixed_window:limit=10,window=1m,burst=3",
		"token_bucket:rate=1/s,limit=4",
		// Refused by both:
		"token_bucket:rate=0/s",
		"token_bucket:burst=-1,rate=1/s",
		"sliding_log:limit=20000,window=1m",
		"leaky_bucket:rate=1/s,burst=1,delay=2",
		"fixed_window:limit=10",
		"bucket:rate=1/s",
		"leaky_bucket:rate=1/s,mode=fast",
		"token_bucket:rate=1/s,name=bad name",
	} {
		_, replayErr := ParsePolicy(spec)
		_, gatewayErr := config.Parse("agree.yaml", []byte("rules:\n  - name: r\n    policies: ["+specYAML(t, spec)+"]\n"))
		if (replayErr == nil) != (gatewayErr == nil) {
			t.Errorf("%q: replay says %v, the gateway says %v", spec, replayErr, gatewayErr)
		}
	}
}

// specYAML writes a one-line policy as a YAML flow mapping, by text.
func specYAML(t *testing.T, spec string) string {
	t.Helper()
	alg, params, _ := strings.Cut(spec, ":")
	fields := []string{"algorithm: " + alg}
	for _, kv := range strings.Split(params, ",") {
		k, v, _ := strings.Cut(kv, "=")
		fields = append(fields, k+": "+strconv.Quote(v))
		if k == "limit" || k == "burst" || k == "delay" {
			fields[len(fields)-1] = k + ": " + v
		}
	}
	return "{" + strings.Join(fields, ", ") + "}"
}
