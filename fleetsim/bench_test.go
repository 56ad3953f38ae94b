package fleetsim

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/replay"
)

// BenchmarkThousandNodes replays the log named by FLEETSIM_LOG (e.g. one
// from bench/replay_gen) through 1,000 simulated nodes under every tier,
// once, and reports the wall time (see scripts/fleetsim_speed.sh):
//
//	FLEETSIM_LOG=/tmp/access.log GOMAXPROCS=1 go test -run '^$' -bench ThousandNodes -benchtime 1x ./fleetsim
func BenchmarkThousandNodes(b *testing.B) {
	path := os.Getenv("FLEETSIM_LOG")
	if path == "" {
		b.Skip("FLEETSIM_LOG names no log")
	}
	routing := Routing(os.Getenv("FLEETSIM_ROUTING"))
	if routing == "" {
		routing = Hash
	}
	spec := os.Getenv("FLEETSIM_POLICY")
	if spec == "" {
		spec = "fixed_window:limit=100,window=1m"
	}
	rp, err := replay.ParsePolicy(spec)
	if err != nil {
		b.Fatal(err)
	}
	p := rp.Policy
	for range b.N {
		f, err := New(Config{Nodes: 1000, Policy: p, Routing: routing, Latency: time.Millisecond, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		in, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		rep, err := replay.Run(context.Background(), in, replay.Config{Policies: []replay.Policy{rp}, Tap: f.Request})
		in.Close()
		if err != nil {
			b.Fatal(err)
		}
		wall := time.Since(start)
		fr := f.Report()
		f.Close()
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(float64(rep.Input.Lines), "lines")
		for _, t := range fr.Tiers {
			b.Logf("%-8s overshoot %d, false refusals %d, %.1f msgs/node/s", t.Tier, t.Overshoot, t.FalseRefusals, t.MessagesPerNodeSecond)
		}
		b.Logf("%d lines, %d requests, %.0f s of log, 1000 nodes, %s routing, %s: %v wall", rep.Input.Lines, fr.Requests, fr.Seconds, routing, spec, wall)
	}
}
