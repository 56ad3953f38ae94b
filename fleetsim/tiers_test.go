package fleetsim

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

var twoSeconds = limit.FixedWindow{Limit: 2000, Window: 2 * time.Second}

// With every message lost the gossip and eventual nodes never hear of
// each other: each admits a whole limit of its own (10 nodes × 360
// requests each, all admitted: 3,600, an overshoot of 1,600).
func TestLossIsolatesTheNodes(t *testing.T) {
	rep := even(t, Config{Nodes: 10, Policy: twoSeconds, Routing: RoundRobin, Loss: 1, Tiers: []Tier{Gossip, Eventual}}, 200)
	for _, tr := range rep.Tiers {
		if tr.Overshoot != 1600 {
			t.Errorf("%s with every message lost: overshoot %d, want 1600", tr.Tier, tr.Overshoot)
		}
	}
}

// Some loss costs the gossip tier a little (the retransmits repair it),
// and more latency costs it more: the view lags by the latency.
func TestLossAndLatencyRaiseTheGossipOvershoot(t *testing.T) {
	over := func(loss float64, lat time.Duration) int64 {
		rep := even(t, Config{Nodes: 10, Policy: twoSeconds, Routing: RoundRobin, Loss: loss, Latency: lat, Tiers: []Tier{Gossip}, Seed: 2}, 200)
		return rep.Tiers[0].Overshoot
	}
	base, lossy, slow := over(0, time.Millisecond), over(0.3, time.Millisecond), over(0, 100*time.Millisecond)
	t.Logf("gossip overshoot: %d; 30%% loss %d; 100ms latency %d", base, lossy, slow)
	if !(lossy > base && lossy < 3*base) {
		t.Errorf("30%% loss: overshoot %d against %d without", lossy, base)
	}
	if !(slow > base+100) {
		t.Errorf("100ms latency: overshoot %d against %d at 1ms", slow, base)
	}
}

// A tier that cannot enforce the policy says so, and the others run.
func TestUnsupportedPolicyIsReportedPerTier(t *testing.T) {
	p := limit.SlidingLog{Limit: 5, Window: time.Second}
	rep := even(t, Config{Nodes: 3, Policy: p, Routing: RoundRobin}, 10)
	for _, tr := range rep.Tiers {
		switch tr.Tier {
		case Gossip, Eventual:
			if !strings.Contains(tr.Unsupported, "sliding") {
				t.Errorf("%s: unsupported %q", tr.Tier, tr.Unsupported)
			}
		default:
			if tr.Unsupported != "" || tr.Admitted == 0 {
				t.Errorf("%s: %+v", tr.Tier, tr)
			}
		}
	}
}

// Skewed traffic under sticky routing: the divided local tier refuses a
// busy client most of its limit, the coordinated tiers do not.
func TestStickyRoutingShowsTheDividedTiersFalseRefusals(t *testing.T) {
	f, err := New(Config{Nodes: 4, Policy: limit.FixedWindow{Limit: 40, Window: time.Minute}, Routing: Regional, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for i := range 30 {
		f.Request(start+int64(i)*int64(time.Second), "busy", 1)
	}
	rep := f.Report()
	if rep.Exact.Admitted != 30 {
		t.Fatalf("exact: %+v", rep.Exact)
	}
	local := tierOf(t, rep, Local)
	if local.FalseRefusals != 20 || local.WorstKeys[0].Key != "busy" || local.WorstKeys[0].FalseRefusals != 20 {
		t.Errorf("local divided: %+v", local)
	}
	for _, tier := range []Tier{Eventual, Gossip, Strict} {
		if tr := tierOf(t, rep, tier); tr.FalseRefusals != 0 || tr.Overshoot != 0 {
			t.Errorf("%s: %+v", tier, tr)
		}
	}
}

// The same seed gives the same report; requests out of order are run at
// the latest time seen.
func TestRunsAreReproducible(t *testing.T) {
	cfg := Config{Nodes: 5, Policy: twoSeconds, Routing: Random, Loss: 0.1, Seed: 9}
	a, b := even(t, cfg, 300), even(t, cfg, 300)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("two runs differ:\n%+v\n%+v", a, b)
	}
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Request(int64(5*time.Second), "k", 1)
	f.Request(int64(4*time.Second), "k", 1)
	if rep := f.Report(); rep.Requests != 2 || rep.Seconds != DefaultInterval.Seconds() {
		t.Fatalf("out of order: %+v", rep)
	}
}
