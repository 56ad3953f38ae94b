package replay

import (
	"errors"
	"testing"

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
