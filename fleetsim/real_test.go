package fleetsim

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/replay"
	"github.com/tollgate-dev/tollgate/store/gossip"
	"github.com/tollgate-dev/tollgate/store/gossip/gossipconf"
)

// BenchmarkRealVersusSimulated runs the same traffic through real
// store/gossip nodes (memberlist on loopback, the default 100ms
// interval) and through the simulator, in one run: nodes nodes each
// sending rate requests a second on one key, paced by a 5ms ticker, from
// the start of a 2s fixed window whose limit (nodes × rate) is reached
// after about a second: store/gossip's BenchmarkFleetOvershoot traffic
// (10 nodes, 200 a second), and that of the three tollgate serve
// processes of cmd/tollgate's TestE2EGossipFleet (3 nodes, 100). The
// requests the real run sent, at the times it sent them, are written as
// a JSON access log and replayed through a simulated fleet of the same
// size (round robin: every node sends at the same rate). Run it once:
//
//	go test -run '^$' -bench RealVersusSimulated -benchtime 1x -v ./fleetsim
func BenchmarkRealVersusSimulated(b *testing.B) {
	for _, c := range []struct{ n, rate int }{{3, 100}, {10, 200}} {
		n := c.n
		b.Run(fmt.Sprintf("nodes=%d/rate=%d", n, c.rate), func(b *testing.B) {
			var real, sim []float64
			for run := range 5 {
				r, s := realVersusSimulated(b, n, c.rate, run)
				real, sim = append(real, float64(r)), append(sim, float64(s))
			}
			mr, ms := median(real), median(sim)
			b.ReportMetric(mr, "real-overshoot")
			b.ReportMetric(ms, "sim-overshoot")
			b.ReportMetric(ms/mr, "sim/real")
			b.ReportMetric(0, "ns/op")
			b.Logf("%d nodes: real overshoot %v (median %.0f), simulated %v (median %.0f): %.2f×", n, real, mr, sim, ms, ms/mr)
		})
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func realVersusSimulated(b *testing.B, n, rate, run int) (real, sim int64) {
	const window = 2 * time.Second
	lim := int64(n * rate)
	p := limit.FixedWindow{Limit: lim, Window: window}
	nodes := make([]*gossip.Store, 0, n)
	for i := range n {
		var seeds []string
		if i > 0 {
			seeds = []string{nodes[0].Addr()}
		}
		s, err := gossip.New(gossip.Config{Config: gossipconf.Config{Name: fmt.Sprintf("r%d-%d-%d", rate, run, i), BindAddr: "127.0.0.1", Seeds: seeds, BindPort: new(0)}})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		nodes = append(nodes, s)
	}
	for _, s := range nodes {
		select {
		case <-s.Ready():
		case <-time.After(10 * time.Second):
			b.Fatal("a node never warmed up")
		}
	}
	time.Sleep(2 * time.Second) // every node lists every other
	now := time.Now()
	time.Sleep(now.Truncate(window).Add(window + 5*time.Millisecond).Sub(now))
	key := fmt.Sprintf("k-%d-%d-%d", n, rate, run)
	var (
		mu       sync.Mutex
		sent     []int64
		admitted int64
		wg       sync.WaitGroup
	)
	start := time.Now()
	for _, s := range nodes {
		wg.Go(func() {
			t := time.NewTicker(5 * time.Millisecond)
			defer t.Stop()
			mine := 0
			for time.Since(start) < window*9/10 {
				<-t.C
				for due := int(time.Since(start) * time.Duration(rate) / time.Second); mine < due; mine++ {
					at := time.Now().UnixNano()
					d, err := s.Apply(context.Background(), key, p, 1)
					mu.Lock()
					sent = append(sent, at)
					if err == nil && d.Allowed {
						admitted++
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	real = admitted - lim
	// The same requests as an access log, replayed through the simulator.
	slices.Sort(sent)
	var log bytes.Buffer
	for _, at := range sent {
		fmt.Fprintf(&log, `{"time":%q,"remote_addr":"192.0.2.1","method":"GET","uri":"/x","status":200}`+"\n",
			time.Unix(0, at).UTC().Format(time.RFC3339Nano))
	}
	f, err := New(Config{Nodes: n, Policy: p, Routing: RoundRobin, Latency: time.Millisecond, Tiers: []Tier{Gossip}, Seed: uint64(run)})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := replay.Run(context.Background(), &log, replay.Config{Policies: []replay.Policy{{Policy: p}}, Tap: f.Request}); err != nil {
		b.Fatal(err)
	}
	rep := f.Report()
	if rep.Requests != int64(len(sent)) || rep.Exact.Admitted != lim {
		b.Fatalf("replayed %d of %d requests, exact admitted %d", rep.Requests, len(sent), rep.Exact.Admitted)
	}
	sim = rep.Tiers[0].Overshoot
	b.Logf("run %d: %d nodes, %d requests: real admitted %d (overshoot %d), simulated overshoot %d", run, n, len(sent), admitted, real, sim)
	return real, sim
}
