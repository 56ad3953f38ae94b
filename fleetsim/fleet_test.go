package fleetsim

import (
	"slices"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// even replays store/gossip's BenchmarkFleetOvershoot traffic: nodes
// nodes each sending rate requests a second on one key, evenly (round
// robin), from 5ms into a 2s fixed window of limit 2,000, for 1.8s.
func even(t *testing.T, cfg Config, rate int) *Report {
	t.Helper()
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixNano() + int64(5*time.Millisecond)
	total := cfg.Nodes * rate
	step := int64(time.Second) / int64(total)
	for i := range total * 18 / 10 {
		f.Request(start+int64(i)*step, "k", 1)
	}
	return f.Report()
}

func tierOf(t *testing.T, rep *Report, tier Tier) TierReport {
	t.Helper()
	for _, tr := range rep.Tiers {
		if tr.Tier == tier {
			return tr
		}
	}
	t.Fatalf("no tier %s in %+v", tier, rep.Tiers)
	return TierReport{}
}

// On steady, even traffic each tier overshoots as its package doc says:
// strict and local divided not at all, gossip within nodes × rate ×
// interval, eventual within twice that.
func TestEvenTrafficOvershootsAsDocumented(t *testing.T) {
	p := limit.FixedWindow{Limit: 2000, Window: 2 * time.Second}
	rep := even(t, Config{Nodes: 10, Policy: p, Routing: RoundRobin, Latency: time.Millisecond, Seed: 1}, 200)
	if rep.Exact.Admitted != 2000 || rep.Requests != 3600 {
		t.Fatalf("exact: %+v of %d", rep.Exact, rep.Requests)
	}
	formula := int64(10 * 200 * 0.1)
	for _, tr := range rep.Tiers {
		t.Logf("%-8s admitted %d, overshoot %d, false refusals %d, %.0f msgs and %.0f bytes per node per second",
			tr.Tier, tr.Admitted, tr.Overshoot, tr.FalseRefusals, tr.MessagesPerNodeSecond, tr.BytesPerNodeSecond)
		if tr.Admitted-tr.Overshoot+tr.FalseRefusals != rep.Exact.Admitted {
			t.Errorf("%s: admitted %d, overshoot %d, false refusals %d do not add up to the exact %d",
				tr.Tier, tr.Admitted, tr.Overshoot, tr.FalseRefusals, rep.Exact.Admitted)
		}
	}
	if tr := tierOf(t, rep, Strict); tr.Overshoot != 0 || tr.FalseRefusals != 0 {
		t.Errorf("strict: %+v", tr)
	}
	if tr := tierOf(t, rep, Local); tr.Overshoot != 0 || tr.FalseRefusals != 0 {
		t.Errorf("local divided on even traffic: %+v", tr)
	}
	if tr := tierOf(t, rep, Gossip); tr.Overshoot <= 0 || tr.Overshoot > formula {
		t.Errorf("gossip overshoot %d, want in (0, %d]", tr.Overshoot, formula)
	}
	if tr := tierOf(t, rep, Eventual); tr.Overshoot <= 0 || tr.Overshoot > 2*formula {
		t.Errorf("eventual overshoot %d, want in (0, %d]", tr.Overshoot, 2*formula)
	}
}

// The steady phase of cmd/tollgate's TestE2EGossipFleet (three tollgate
// serve processes, one key, limit 300, 100ms) at the rates its runs
// achieved, nine draws of the interval phases each: the figures
// BENCHMARKS.md compares with the real runs' (go test -run ThreeProcess
// -v ./fleetsim). Each median is within the formula, nodes × rate ×
// interval.
func TestThreeProcessTraffic(t *testing.T) {
	p := limit.FixedWindow{Limit: 300, Window: time.Hour}
	for _, rate := range []int{95, 88, 73} {
		var xs []int64
		for seed := range 9 {
			rep := even(t, Config{Nodes: 3, Policy: p, Routing: RoundRobin, Latency: time.Millisecond,
				Seed: uint64(seed), Tiers: []Tier{Gossip}}, rate)
			xs = append(xs, rep.Tiers[0].Overshoot)
		}
		sorted := slices.Clone(xs)
		slices.Sort(sorted)
		med := sorted[len(sorted)/2]
		t.Logf("3 nodes × %d/s: gossip overshoot %v, median %d", rate, xs, med)
		if med <= 0 || med > int64(3*rate)/10 {
			t.Errorf("%d/s: median overshoot %d outside (0, %d]", rate, med, 3*rate/10)
		}
	}
}
