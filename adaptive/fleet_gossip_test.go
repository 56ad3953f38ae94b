package adaptive

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/store/gossip"
	"github.com/tollgate-dev/tollgate/store/gossip/gossipconf"
)

// Three loops sharing their factor through real gossip nodes on
// loopback: one node's cut reaches the two others (their polls apply
// it) within a second, and the fleet's minimum is what each applies.
func TestLoopsShareTheFactorByGossip(t *testing.T) {
	var nodes []*gossip.Store
	for i := range 3 {
		cfg := gossip.Config{Config: gossipconf.Config{Name: fmt.Sprintf("g%d", i), BindAddr: "127.0.0.1", BindPort: new(0)}}
		if i > 0 {
			cfg.Seeds = []string{nodes[0].Addr()}
		}
		s, err := gossip.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		nodes = append(nodes, s)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, s := range nodes {
		for s.Stats().Alive != 3 {
			if time.Now().After(deadline) {
				t.Fatalf("%s lists %d members", s.Name(), s.Stats().Alive)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	s := latencySettings()
	s.FleetTier = FleetGossip
	var loops []*Loop
	for _, n := range nodes {
		l, err := NewLoop(LoopConfig{Settings: s, Fleet: NewBoardFleet(n)})
		if err != nil {
			t.Fatal(err)
		}
		loops = append(loops, l)
	}
	ctx := context.Background()
	now := time.Now()
	for _, l := range loops {
		l.Tick(ctx, now)
	}
	// The origin degrades as the first node sees it: it cuts to 750.
	for range 100 {
		loops[0].Meter().Begin()
		loops[0].Meter().End(time.Second, false, nil)
	}
	start := time.Now()
	if out := loops[0].Tick(ctx, start); out.Factor != 750 {
		t.Fatalf("the first node cut to %d, want 750", out.Factor)
	}
	for {
		all := true
		for _, l := range loops[1:] {
			l.Poll(ctx, time.Now())
			all = all && l.Factor().Permille() == 750
		}
		if all {
			break
		}
		if time.Since(start) > time.Second {
			t.Fatalf("a second after the cut: factors %d %d, want 750", loops[1].Factor().Permille(), loops[2].Factor().Permille())
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("every node applies the cut %v after it", time.Since(start))
	// A node's own lower factor stands against the fleet's higher ones.
	if f, ok, err := NewBoardFleet(nodes[2]).Lowest(ctx, "origin", time.Now(), 3*time.Second); err != nil || !ok || f != 750 {
		t.Fatalf("lowest %d %v %v", f, ok, err)
	}
	// Once the cutting node's entry is stale, the others' 1000 stands.
	later := start.Add(10 * time.Second)
	loops[1].Tick(ctx, later)
	loops[2].Tick(ctx, later)
	for {
		loops[2].Poll(ctx, later)
		if loops[2].Factor().Permille() == Base {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("the stale cut still applies: %d", loops[2].Factor().Permille())
		}
		time.Sleep(2 * time.Millisecond)
	}
}
