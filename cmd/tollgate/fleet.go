package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/fleetsim"
	"github.com/tollgate-dev/tollgate/replay"
)

// fleetOptions are `tollgate replay`'s -fleet flags: the same replay,
// also run through a simulated fleet of N nodes under every tier.
//
// The fleet simulator is a flag of replay rather than a command of its
// own because it needs everything replay already has (the log formats,
// the key, the filters, the policies, the text, JSON and HTML reports)
// and answers the same question for a fleet: one read of the log feeds
// both (replay.Config.Tap), and the fleet's figures are a section of the
// same report.
type fleetOptions struct {
	nodes             int
	routing, tiers    string
	weights           string
	interval, latency time.Duration
	loss              float64
	seed              uint64
}

func registerFleetFlags(fs *flag.FlagSet, o *fleetOptions) {
	fs.IntVar(&o.nodes, "fleet", 0, "also replay through a simulated fleet of `N` nodes under each consistency tier (local divided, eventual, gossip, strict), against the exact single counter")
	fs.StringVar(&o.routing, "fleet-routing", "hash", "with -fleet: how requests reach nodes, a `model`: hash (of the key), roundrobin, random or regional (each key sticks to one node, nodes weighted by -fleet-weights)")
	fs.StringVar(&o.weights, "fleet-weights", "4,2,1,1", "with -fleet-routing regional: the nodes' relative `sizes`, repeated over the nodes")
	fs.StringVar(&o.tiers, "fleet-tiers", "local,eventual,gossip,strict", "with -fleet: the `tiers` to simulate, comma-separated")
	fs.DurationVar(&o.interval, "fleet-interval", fleetsim.DefaultInterval, "with -fleet: the gossip round and eventual sync `interval`")
	fs.DurationVar(&o.latency, "fleet-latency", time.Millisecond, "with -fleet: one-way network `delay` of a gossip message")
	fs.Float64Var(&o.loss, "fleet-loss", 0, "with -fleet: `probability` (0 to 1) that a gossip message to a node, or an eventual sync, is lost")
	fs.Uint64Var(&o.seed, "fleet-seed", 1, "with -fleet: `seed` of the random routing, interval phases and losses")
}

// fleetRun is the fleets of one replay: one per policy.
type fleetRun struct {
	fleets []*fleetsim.Fleet
}

// start builds a fleet per policy, or returns nil when -fleet is unset.
func (o *fleetOptions) start(policies []replay.Policy) (*fleetRun, error) {
	if o.nodes == 0 {
		return nil, nil
	}
	if len(policies) == 0 {
		return nil, badReplayUsage(errors.New("-fleet simulates the -policy flags: give at least one"))
	}
	cfg := fleetsim.Config{Nodes: o.nodes, Interval: o.interval, Latency: o.latency, Loss: o.loss, Seed: o.seed}
	var err error
	if cfg.Routing, err = fleetsim.ParseRouting(o.routing); err != nil {
		return nil, badReplayUsage(err)
	}
	if cfg.Routing == fleetsim.Regional {
		if cfg.Weights, err = fleetsim.ParseWeights(o.weights); err != nil {
			return nil, badReplayUsage(err)
		}
	}
	for _, s := range strings.Split(o.tiers, ",") {
		t, err := fleetsim.ParseTier(strings.TrimSpace(s))
		if err != nil {
			return nil, badReplayUsage(err)
		}
		cfg.Tiers = append(cfg.Tiers, t)
	}
	fr := &fleetRun{}
	for _, p := range policies {
		c := cfg
		c.Policy = p.Policy
		f, err := fleetsim.New(c)
		if err != nil {
			fr.close()
			return nil, badReplayUsage(fmt.Errorf("-fleet: %w", err))
		}
		fr.fleets = append(fr.fleets, f)
	}
	return fr, nil
}

// tap feeds a replayed request to every fleet.
func (fr *fleetRun) tap(t int64, key string, cost int64) {
	for _, f := range fr.fleets {
		f.Request(t, key, cost)
	}
}

// section returns the fleets' reports as a section of the replay's.
func (fr *fleetRun) section() (replay.Section, error) {
	var reps []*fleetsim.Report
	for _, f := range fr.fleets {
		reps = append(reps, f.Report())
	}
	var text strings.Builder
	if err := fleetsim.WriteText(&text, reps); err != nil {
		return replay.Section{}, err
	}
	html, err := fleetsim.HTML(reps)
	if err != nil {
		return replay.Section{}, err
	}
	return replay.Section{Title: "Fleet simulation", Data: reps, Text: text.String(), HTML: html}, nil
}

func (fr *fleetRun) close() {
	for _, f := range fr.fleets {
		f.Close()
	}
}
