package fleetsim

import (
	"fmt"
	"math"
	"testing"

	"github.com/tollgate-dev/tollgate/limit"
)

func testRouter(t *testing.T, cfg Config) *router {
	t.Helper()
	cfg.Policy = limit.FixedWindow{Limit: 1, Window: 1e9}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.defaults()
	return newRouter(&cfg)
}

// Hash and regional routing send a key to one node, always; round robin
// cycles through the nodes; random reaches them all.
func TestRoutingModels(t *testing.T) {
	for _, kind := range []Routing{Hash, Regional} {
		r := testRouter(t, Config{Nodes: 7, Routing: kind})
		for i := range 100 {
			k := fmt.Sprintf("10.0.0.%d", i)
			n := r.route(k)
			if n < 0 || n >= 7 {
				t.Fatalf("%s: node %d", kind, n)
			}
			for range 3 {
				if m := r.route(k); m != n {
					t.Fatalf("%s: %s went to %d then %d", kind, k, n, m)
				}
			}
		}
	}
	r := testRouter(t, Config{Nodes: 3, Routing: RoundRobin})
	for i := range 9 {
		if n := r.route("k"); n != i%3 {
			t.Fatalf("round robin: request %d to node %d", i, n)
		}
	}
	r = testRouter(t, Config{Nodes: 5, Routing: Random, Seed: 3})
	seen := map[int]bool{}
	for range 200 {
		seen[r.route("k")] = true
	}
	if len(seen) != 5 {
		t.Fatalf("random reached %d of 5 nodes", len(seen))
	}
}

// Regional routing gives each node clients in proportion to its weight.
func TestRegionalRoutingFollowsTheWeights(t *testing.T) {
	r := testRouter(t, Config{Nodes: 4, Routing: Regional, Weights: []float64{4, 2, 1, 1}})
	var got [4]int
	const n = 40000
	for i := range n {
		got[r.route(fmt.Sprintf("client-%d", i))]++
	}
	for i, w := range []float64{4, 2, 1, 1} {
		want := n * w / 8
		if math.Abs(float64(got[i])-want) > want*0.05 {
			t.Errorf("node %d: %d clients, want about %.0f", i, got[i], want)
		}
	}
}

func TestConfigIsValidated(t *testing.T) {
	p := limit.FixedWindow{Limit: 1, Window: 1e9}
	for _, c := range []Config{
		{Nodes: 0, Policy: p},
		{Nodes: MaxNodes + 1, Policy: p},
		{Nodes: 3},
		{Nodes: 3, Policy: p, Routing: "anycast"},
		{Nodes: 3, Policy: p, Tiers: []Tier{"paxos"}},
		{Nodes: 3, Policy: p, Loss: 1.5},
		{Nodes: 3, Policy: p, Latency: -1},
		{Nodes: 3, Policy: p, Interval: -1},
		{Nodes: 3, Policy: p, Weights: []float64{1, 0}},
		{Nodes: 3, Policy: p, Loss: math.NaN()},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if _, err := ParseWeights("4,x"); err == nil {
		t.Error("weight x accepted")
	}
	if _, err := ParseWeights("4,-1"); err == nil {
		t.Error("weight -1 accepted")
	}
}
