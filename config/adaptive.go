package config

import (
	"fmt"
	"slices"
	"time"

	"github.com/tollgate-dev/tollgate/adaptive/adaptiveconf"
	"github.com/tollgate-dev/tollgate/rules"
)

// AdaptiveSettings returns the adaptive controllers, defaults filled, in
// name order. c must be valid (as Load returns it).
func (c *Config) AdaptiveSettings() []adaptiveconf.Settings {
	var out []adaptiveconf.Settings
	for _, name := range sortedNames(c.Adaptive) {
		s, _ := c.adaptiveSettings(name, nil)
		out = append(out, s)
	}
	return out
}

// BaseScales is a rules.ScaleFunc holding every controller of c at the
// base factor: for what compiles the rules without running the
// controllers (tollgate check, tests). A gateway scales by its running
// controllers instead.
func (c *Config) BaseScales() rules.ScaleFunc {
	return func(name string) rules.Scale {
		if _, ok := c.Adaptive[name]; ok {
			return &adaptiveconf.Factor{}
		}
		return nil
	}
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// validateAdaptive checks every controller and every policy's reference
// to one, and the concurrency lease.
func (c *Config) validateAdaptive(ps *problems) {
	if l := c.ConcurrencyLease; l != 0 && l < 100*time.Millisecond {
		ps.Add(c.at("concurrency_lease"), "concurrency_lease %v is below the least value of 100ms", l)
	}
	for _, name := range sortedNames(c.Adaptive) {
		c.adaptiveSettings(name, ps)
	}
	check := func(path, name string) {
		if name == "" {
			return
		}
		if _, ok := c.Adaptive[name]; !ok {
			msg := fmt.Sprintf("%s: unknown adaptive controller %q", path, name)
			if m := didYouMean(name, sortedNames(c.Adaptive)...); m != "" {
				msg += m
			} else if len(c.Adaptive) == 0 {
				msg += " (the file has no adaptive section)"
			}
			ps.Add(c.at(path), "%s", msg)
		}
	}
	for i, r := range c.Rules {
		for j, p := range r.Policies {
			check(fmt.Sprintf("rules[%d].policies[%d].adaptive", i, j), p.Adaptive)
		}
		if r.Tiers != nil {
			for _, plan := range sortedNames(r.Tiers.Plans) {
				for j, p := range r.Tiers.Plans[plan] {
					check(fmt.Sprintf("rules[%d].tiers.plans.%s[%d].adaptive", i, plan, j), p.Adaptive)
				}
			}
		}
	}
}

// adaptiveSettings converts controller name, recording its problems in
// ps (when not nil), at their lines.
func (c *Config) adaptiveSettings(name string, ps *problems) (adaptiveconf.Settings, bool) {
	at := "adaptive." + name
	var bad func(path, format string, args ...any)
	if ps != nil {
		bad = func(path, format string, args ...any) {
			ps.Add(c.at(path), "%s: "+format, append([]any{path}, args...)...)
		}
	}
	good := true
	if !rules.ValidName(name) {
		good = false
		if bad != nil {
			bad(at, "controller name %q: want 1-64 letters, digits, '-', '_' or '.'", name)
		}
	}
	a := c.Adaptive[name]
	env := adaptiveconf.Env{Redis: c.Store.Redis != nil, Gossip: c.Store.Gossip != nil, RoutesTo: c.routesTo}
	s, ok := a.Settings(name, at, env, bad)
	return s, good && ok
}

// routesTo reports whether a route sends requests to upstream.
func (c *Config) routesTo(upstream string) bool {
	for _, r := range c.Routes {
		if r.Upstream == upstream {
			return true
		}
	}
	return false
}
