package gateway

import (
	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/rules"
)

// refusesWithoutRedis returns the names of cfg's enforced rules that wait
// on Redis (the engine's store when it is Redis, or strict) and whose
// failure mode is closed: those that refuse every request while Redis is
// down.
func refusesWithoutRedis(cfg *rules.Config, onRedis bool) []string {
	if !onRedis {
		return nil
	}
	var names []string
	for i := range cfg.Rules {
		r := &cfg.Rules[i]
		switch r.Consistency {
		case "", rules.ConsistencyDefault, rules.ConsistencyStrict:
		default:
			continue
		}
		if !r.Shadow && cfg.OnErrorOf(r) == failmode.Closed {
			names = append(names, r.Name)
		}
	}
	return names
}

// refusesWhileCold returns the names of cfg's enforced gossip rules whose
// failure mode is closed: those that refuse every request until the
// gateway has exchanged state with the gossip fleet.
func refusesWhileCold(cfg *rules.Config) []string {
	var names []string
	for i := range cfg.Rules {
		r := &cfg.Rules[i]
		if r.Consistency == rules.ConsistencyGossip && !r.Shadow && cfg.OnErrorOf(r) == failmode.Closed {
			names = append(names, r.Name)
		}
	}
	return names
}
