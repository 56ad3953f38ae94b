package config

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/rules"
)

// validateTiers checks that the rules' consistency tiers fit the store:
// strict and eventual rules share counts through Redis, so they need
// store.redis; gossip rules share them with the other gateways, so they
// need store.gossip. (The rule engine validates the tier fields themselves.)
//
// An eventual rule's sync_interval is at least 10ms: the rule's store
// makes a Redis round trip every interval, each bounded by the interval,
// so a tiny one spins a core and can never complete a sync.
func (c *Config) validateTiers(ps *problems) {
	for i, r := range c.Rules {
		if r.Consistency == rules.ConsistencyEventual {
			path := fmt.Sprintf("rules[%d].sync_interval", i)
			checkMin(ps, c.at(path), path, r.SyncInterval, minSyncInterval)
		}
	}
	for i, r := range c.Rules {
		if r.Consistency == rules.ConsistencyGossip && c.Store.Gossip == nil {
			path := fmt.Sprintf("rules[%d].consistency", i)
			ps.Add(c.at(path), "%s: gossip needs a store.gossip section (this gateway's name, address and seeds)", path)
		}
	}
	if c.Store.Redis != nil {
		return
	}
	for i, r := range c.Rules {
		if r.Consistency == rules.ConsistencyStrict || r.Consistency == rules.ConsistencyEventual {
			path := fmt.Sprintf("rules[%d].consistency", i)
			ps.Add(c.at(path), "%s: %s needs store.redis (the store is in memory)", path, r.Consistency)
		}
	}
}
