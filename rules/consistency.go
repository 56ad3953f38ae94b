package rules

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// DefaultSyncInterval is an eventual rule's Rule.SyncInterval when it
// sets none: what the store opener gives store/eventual, and what
// `tollgate check` prints.
const DefaultSyncInterval = 100 * time.Millisecond

// The consistency tiers, the values of Rule.Consistency.
const (
	// ConsistencyDefault charges the rule on the store given to New.
	ConsistencyDefault = "default"
	// ConsistencyStrict charges the rule with one atomic decision on the
	// shared store (Redis): exact across gateways, one round trip.
	ConsistencyStrict = "strict"
	// ConsistencyEventual decides locally against a view of the global
	// count synced every Rule.SyncInterval: in-process speed, a bounded
	// overshoot across gateways.
	ConsistencyEventual = "eventual"
	// ConsistencyGossip decides locally against this gateway's counters
	// plus the merged view of the other gateways', shared by gossip
	// (store/gossip): no central store, a bounded overshoot across
	// gateways. Until a gateway has exchanged state with the fleet, its
	// gossip rules answer by their failure mode (Config.OnErrorOf).
	ConsistencyGossip = "gossip"
	// ConsistencyLocal counts in this process only, each gateway
	// enforcing its share (the limit divided by Rule.Nodes).
	ConsistencyLocal = "local"
)

// StoreFunc returns the store for rule r, whose Consistency is strict,
// eventual, gossip or local, or nil for the engine's store. Its error is reported
// at the rule's consistency field.
type StoreFunc func(r Rule) (limit.Store, error)

// The ranks of the tiers: the order in which a request's store groups are
// charged, cheapest (in-process, nothing shared) first.
const (
	rankLocal = iota
	rankEventual
	rankGossip
	rankDefault
	rankStrict
)

// tier is a rule's compiled consistency setting.
type tier struct {
	consistency string // "" for the default
	rank        int
	nodes       int // local division; 1 otherwise
}

// compileTier validates r's consistency fields.
func compileTier(r *Rule, where string, ps *problems) tier {
	t := tier{consistency: r.Consistency, rank: rankDefault, nodes: 1}
	switch r.Consistency {
	case "", ConsistencyDefault:
		t.consistency = ""
	case ConsistencyStrict:
		t.rank = rankStrict
	case ConsistencyEventual:
		t.rank = rankEventual
	case ConsistencyGossip:
		t.rank = rankGossip
	case ConsistencyLocal:
		t.rank = rankLocal
	default:
		ps.add(where+".consistency", "%q: want default, strict, eventual, gossip or local", r.Consistency)
		t.consistency = ""
	}
	if r.OnError != "" {
		checkOnError(r.OnError, where+".on_error", ps)
		if r.Consistency != ConsistencyStrict && r.Consistency != ConsistencyGossip {
			ps.add(where+".on_error", "set but the rule's consistency is neither strict nor gossip (set on_error at the top level for the other rules on the store)")
		}
	}
	if r.SyncInterval < 0 {
		ps.add(where+".sync_interval", "%v must not be negative", r.SyncInterval)
	} else if r.SyncInterval > 0 && r.Consistency != ConsistencyEventual {
		ps.add(where+".sync_interval", "set but the rule's consistency is not eventual")
	}
	switch {
	case r.Nodes < 0:
		ps.add(where+".nodes", "%d must not be negative", r.Nodes)
	case r.Nodes > 0 && r.Consistency != ConsistencyLocal:
		ps.add(where+".nodes", "set but the rule's consistency is not local")
	case r.Nodes > 0:
		t.nodes = r.Nodes
	}
	return t
}

// tierPolicy adapts a policy to the rule's tier: divided by the node count
// for a local rule; refused for an eventual or gossip one when it cannot
// be shared as counters.
// The field is where the problem lies ("" for the policy as a whole).
func (t tier) tierPolicy(p limit.Policy) (limit.Policy, string, error) {
	switch t.consistency {
	case ConsistencyEventual:
		if _, ok := p.(limit.SlidingLog); ok {
			return nil, "algorithm", fmt.Errorf("sliding_log has no eventual tier (its state is a list of instants): use sliding_window or consistency strict")
		}
	case ConsistencyGossip:
		if !Gossipable(p.Algorithm()) {
			return nil, "algorithm", fmt.Errorf("%v has no gossip tier (%s): use fixed_window, sliding_window or token_bucket, or consistency strict", p.Algorithm(), notGossipable[p.Algorithm()])
		}
	case ConsistencyLocal:
		if t.nodes > 1 {
			d, err := limit.Divide(p, t.nodes)
			if err != nil {
				return nil, "", err
			}
			return d, "", nil
		}
	}
	return p, "", nil
}

// storeGroup is a store some rules are charged on, with the rank at which
// it is charged.
type storeGroup struct {
	store limit.Store
	rank  int
}

// bindStores asks cfg.Stores for the store of every rule with a tier and
// groups the rules by store. One group left is the engine's store (the
// single-store path); several are charged in rank order (Decide).
func (e *Engine) bindStores(cfg *Config) error {
	var ps problems
	groups := []storeGroup{{store: e.store, rank: rankDefault}}
	used := make([]bool, 1, 4)
	for _, list := range [][]*compiledRule{e.enforced, e.shadow} {
		for _, cr := range list {
			st := e.store
			if cr.tier.consistency != "" {
				s, err := cfg.Stores(cfg.Rules[cr.index])
				if err != nil {
					ps.add(fmt.Sprintf("rules[%d].consistency", cr.index), "%s: %w", cr.tier.consistency, err)
					continue
				}
				if s != nil {
					st = s
				}
			}
			g := slices.IndexFunc(groups, func(g storeGroup) bool { return sameStore(g.store, st) })
			if g < 0 {
				g = len(groups)
				groups = append(groups, storeGroup{store: st, rank: cr.tier.rank})
				used = append(used, false)
			}
			if !sameStore(st, e.store) {
				groups[g].rank = min(groups[g].rank, cr.tier.rank)
			}
			used[g] = true
			cr.group = g
		}
	}
	if len(ps) > 0 {
		return errors.Join(ps...)
	}
	// Drop unused groups, order the rest cheapest first (stable: equal
	// ranks keep the rules' order), and renumber.
	order := make([]int, 0, len(groups))
	for g := range groups {
		if used[g] {
			order = append(order, g)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return groups[a].rank - groups[b].rank })
	renum := make([]int, len(groups))
	e.groups = e.groups[:0]
	for i, g := range order {
		renum[g] = i
		e.groups = append(e.groups, groups[g])
	}
	for _, list := range [][]*compiledRule{e.enforced, e.shadow} {
		for _, cr := range list {
			cr.group = renum[cr.group]
		}
	}
	if len(e.groups) <= 1 {
		if len(e.groups) == 1 {
			e.store = e.groups[0].store
		}
		e.groups = nil
	}
	return nil
}

// sameStore reports whether a and b are the same store, without panicking
// on a store whose dynamic type is not comparable (such stores are never
// the same).
func sameStore(a, b limit.Store) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}

// notGossipable says why an algorithm's state cannot be gossiped.
var notGossipable = map[limit.Algorithm]string{
	limit.AlgSlidingLog:  "its state is a list of instants",
	limit.AlgLeakyBucket: "a level and its last update do not add up across gateways",
}

// Gossipable reports whether algorithm a can be a gossip rule's: its state
// is counters that add up across gateways (fixed window, sliding window,
// token bucket). store/gossip enforces the same list (gossip.CheckPolicy);
// a test in package storeopen keeps the two in agreement.
func Gossipable(a limit.Algorithm) bool {
	switch a {
	case limit.AlgFixedWindow, limit.AlgSlidingWindow, limit.AlgTokenBucket:
		return true
	}
	return false
}
