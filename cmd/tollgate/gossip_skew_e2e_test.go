package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestE2EGossipSkewedClocks runs fleets of three tollgate serve processes
// whose gossip clocks are shifted apart (TOLLGATE_TEST_CLOCK_OFFSET, read
// only by a binary built with the tag tollgate_testclock: a test-only
// knob no release build has) and sends 20 requests a second to each node
// on one key limited to 20 per 1 s window: the fleet admits 20 a second,
// within the overshoot the gossip tier documents (nodes × rate per node
// × interval per window, plus one limit for the window ended early when a
// node takes up the fleet's time). On their own clocks, nodes 1.5 s or
// more apart each enforced the whole limit alone (every request, 60/s).
// One fleet has clocks at 0, +1.5 s and −3 s, the other at 0, +20 s and
// −0.5 s.
func TestE2EGossipSkewedClocks(t *testing.T) {
	tollgateBinary(t) // skips in -short
	bin, err := buildTollgate(t.TempDir(), "tollgate_testclock")
	if err != nil {
		t.Fatal(err)
	}
	const (
		lim     = 20
		perNode = 20.0
		iv      = 100 * time.Millisecond
		run     = 4 * time.Second
	)
	for _, offs := range [][]time.Duration{{0, 1500 * time.Millisecond, -3 * time.Second}, {0, 20 * time.Second, -500 * time.Millisecond}} {
		t.Run(fmt.Sprint(offs), func(t *testing.T) {
			ports := []int{gossipPort(t), gossipPort(t), gossipPort(t)}
			var nodes []*proc
			for i, off := range offs {
				cfg := baseCfg + "routes: [{path: /, upstream: demo}]\n" +
					gossipNode(i, ports, fmt.Sprintf(", interval: %v", iv)) + fleetRule(lim, "1s")
				file := filepath.Join(t.TempDir(), "tollgate.yaml")
				if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
					t.Fatal(err)
				}
				nodes = append(nodes, startServeBin(t, bin, file, []string{"TOLLGATE_TEST_CLOCK_OFFSET=" + off.String()}))
			}
			for _, p := range nodes {
				eventually(t, p.admin+" to list 3 members", func() bool { return p.metric(`tollgate_gossip_members{state="alive"}`) == "3" })
				eventually(t, p.admin+" to warm up", func() bool {
					resp, _ := get(t, "http://"+p.admin+"/readyz")
					return resp.StatusCode == 200
				})
			}
			ls, took := steady(nodes, "/skew", perNode, run, nil)
			tot := total(ls)
			if tot.failed != 0 || tot.cold != 0 || tot.other != 0 {
				t.Fatalf("answers: %+v", ls)
			}
			windows := took.Seconds() + 1 // windows touched
			over := float64(len(nodes)) * perNode * iv.Seconds() * windows
			hi := float64(lim)*windows + over + lim
			lo := float64(lim) * (took.Seconds() - 1)
			rate := float64(tot.admitted) / took.Seconds()
			t.Logf("clocks %v: admitted %d of %d in %v: %.1f/s against a limit of %d/s (bound %.0f: the documented overshoot %.0f and one limit); per node %+v",
				offs, tot.admitted, tot.sent, took.Round(time.Millisecond), rate, lim, hi, over, ls)
			if float64(tot.admitted) > hi || float64(tot.admitted) < lo {
				t.Errorf("clocks %v: the fleet admitted %d in %v, want %.0f to %.0f", offs, tot.admitted, took, lo, hi)
			}
			for _, p := range nodes {
				if got := p.metric(`tollgate_gossip_dropped_total{reason="future"}`); got != "0" {
					t.Errorf("%s dropped %s messages as from the future", p.addr, got)
				}
			}
		})
	}
}
