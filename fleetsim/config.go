package fleetsim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// Tier names a consistency tier the fleet is simulated under.
type Tier string

// The tiers, as configuration files name them.
const (
	// Local is the local tier with the limit divided among the nodes
	// (limit.Divide): each node counts alone in its own store/memory.
	Local Tier = "local"
	// Eventual is store/eventual: each node decides on its local view and
	// syncs its deltas with one central counter every interval.
	Eventual Tier = "eventual"
	// Gossip is store/gossip: each node decides on its own counter plus
	// the merged view of the others', shared by rounds every interval.
	Gossip Tier = "gossip"
	// Strict decides every request in one central store (store/redis in
	// a real fleet): the exact answer, at a round trip per request.
	Strict Tier = "strict"
)

// AllTiers are the tiers simulated by default, from no coordination to
// the most.
var AllTiers = []Tier{Local, Eventual, Gossip, Strict}

// ParseTier returns the tier named s.
func ParseTier(s string) (Tier, error) {
	for _, t := range AllTiers {
		if string(t) == s {
			return t, nil
		}
	}
	return "", fmt.Errorf("fleetsim: unknown tier %q (want local, eventual, gossip or strict)", s)
}

// Routing is how requests are spread over the nodes.
type Routing string

// The routing models.
const (
	// Hash sends each key to one node by a hash of it (the client
	// address, with replay's default key): a consistent-hashing
	// balancer.
	Hash Routing = "hash"
	// RoundRobin sends each request to the next node in turn.
	RoundRobin Routing = "roundrobin"
	// Random sends each request to a node drawn at random.
	Random Routing = "random"
	// Regional sends each client (key) to one node for good, the nodes
	// drawing clients in proportion to their weights (Config.Weights):
	// a client in New York reaches the US-East node, and US-East is
	// bigger than APAC.
	Regional Routing = "regional"
)

// ParseRouting returns the routing model named s.
func ParseRouting(s string) (Routing, error) {
	switch r := Routing(s); r {
	case Hash, RoundRobin, Random, Regional:
		return r, nil
	}
	return "", fmt.Errorf("fleetsim: unknown routing %q (want hash, roundrobin, random or regional)", s)
}

// DefaultWeights are the regional nodes' weights, repeated over the
// nodes: one big region, one medium, two small.
var DefaultWeights = []float64{4, 2, 1, 1}

// ParseWeights reads a comma-separated list of positive weights.
func ParseWeights(s string) ([]float64, error) {
	var ws []float64
	for _, f := range strings.Split(s, ",") {
		w, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(w > 0) || w > 1e9 {
			return nil, fmt.Errorf("fleetsim: weight %q: want a positive number", f)
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// Config describes the simulated fleet. The zero value of each field but
// Nodes and Policy is its documented default.
type Config struct {
	// Nodes is the size of the fleet, 1 to MaxNodes.
	Nodes int
	// Policy is the limit every node enforces on every key.
	Policy limit.Policy
	// Routing spreads the requests over the nodes; zero means Hash.
	Routing Routing
	// Weights are the nodes' relative sizes under Regional routing,
	// repeated over the nodes; nil means DefaultWeights.
	Weights []float64
	// Tiers to simulate; nil means AllTiers.
	Tiers []Tier
	// Interval is the gossip round and the eventual sync period; zero
	// means 100ms, both tiers' default.
	Interval time.Duration
	// Latency is the one-way network delay of a gossip message; zero
	// means none (negative is refused).
	Latency time.Duration
	// Loss is the probability, 0 to 1, that a gossip message to one
	// node, or an eventual node's whole sync, is lost.
	Loss float64
	// Seed makes the random routing, the interval phases and the losses
	// reproducible.
	Seed uint64
	// Top is how many keys the report lists per tier; zero means 5.
	Top int
}

// MaxNodes bounds Config.Nodes (gossip names at most 4,096 nodes).
const MaxNodes = 4096

// DefaultInterval is Config.Interval's default.
const DefaultInterval = 100 * time.Millisecond

// Validate reports every problem with c, or nil.
func (c Config) Validate() error {
	var errs []error
	if c.Nodes < 1 || c.Nodes > MaxNodes {
		errs = append(errs, fmt.Errorf("fleetsim: %d nodes: want 1 to %d", c.Nodes, MaxNodes))
	}
	if c.Policy == nil {
		errs = append(errs, errors.New("fleetsim: no policy"))
	} else if err := c.Policy.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("fleetsim: %w", err))
	}
	if c.Routing != "" {
		if _, err := ParseRouting(string(c.Routing)); err != nil {
			errs = append(errs, err)
		}
	}
	for _, w := range c.Weights {
		if !(w > 0) || w > 1e9 {
			errs = append(errs, fmt.Errorf("fleetsim: weight %v: want a positive number", w))
		}
	}
	for _, t := range c.Tiers {
		if _, err := ParseTier(string(t)); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Interval < 0 {
		errs = append(errs, fmt.Errorf("fleetsim: interval %v must not be negative", c.Interval))
	}
	if c.Latency < 0 {
		errs = append(errs, fmt.Errorf("fleetsim: latency %v must not be negative", c.Latency))
	}
	if !(c.Loss >= 0 && c.Loss <= 1) {
		errs = append(errs, fmt.Errorf("fleetsim: loss %v: want 0 to 1", c.Loss))
	}
	return errors.Join(errs...)
}

func (c *Config) defaults() {
	if c.Routing == "" {
		c.Routing = Hash
	}
	if c.Weights == nil {
		c.Weights = DefaultWeights
	}
	if c.Tiers == nil {
		c.Tiers = AllTiers
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Top <= 0 {
		c.Top = 5
	}
}
