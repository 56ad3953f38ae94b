package replay

import (
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// A suggested policy is written as a person would type it: a window of
// one unit still has its number ("window=1m", not "window=m"), and the
// text reads back as the same policy.
func TestSuggestedPoliciesSpellTheirWindowWithANumber(t *testing.T) {
	for _, c := range []struct {
		p    limit.Policy
		want string
	}{
		{limit.FixedWindow{Limit: 4, Window: time.Minute}, "fixed_window:limit=4,window=1m"},
		{limit.SlidingLog{Limit: 4, Window: time.Hour}, "sliding_log:limit=4,window=1h"},
		{limit.SlidingWindow{Limit: 4, Window: time.Second}, "sliding_window:limit=4,window=1s"},
		{limit.SlidingWindow{Limit: 4, Window: 90 * time.Second}, "sliding_window:limit=4,window=1m30s"},
		{limit.FixedWindow{Limit: 4, Window: 24 * time.Hour}, "fixed_window:limit=4,window=1d"},
	} {
		got := policyFlag(c.p)
		if got != c.want {
			t.Errorf("%v written %q; want %q", c.p, got, c.want)
		}
		back, err := ParsePolicy(got)
		if err != nil || back.Policy != c.p {
			t.Errorf("%q reads back as %v, %v", got, back.Policy, err)
		}
	}
	rep := runBounded(t, "2015-05-17T10:00:00Z,a\n2015-05-17T10:00:01Z,a\n",
		Policy{Policy: limit.FixedWindow{Limit: 1, Window: time.Minute}})
	if s := rep.Policies[0].Suggestion; s == nil || !strings.HasSuffix(s.ForTopPolicy, "window=1m") {
		t.Errorf("suggestion %+v; want a window=1m policy", s)
	}
}
