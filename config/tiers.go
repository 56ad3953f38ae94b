package config

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/rules"
)

// validateTiers checks that the rules' consistency tiers fit the store:
// strict and eventual rules share counts through Redis, so they need
// store.redis. (The rule engine validates the tier fields themselves.)
func (c *Config) validateTiers(ps *problems) {
	if c.Store.Redis != nil {
		return
	}
	for i, r := range c.Rules {
		if r.Consistency == rules.ConsistencyStrict || r.Consistency == rules.ConsistencyEventual {
			path := fmt.Sprintf("rules[%d].consistency", i)
			ps.add(c.pathPos(path+": "), "%s: %s needs store.redis (the store is in memory)", path, r.Consistency)
		}
	}
}
