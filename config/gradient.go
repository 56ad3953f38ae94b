package config

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/adaptive/adaptiveconf"
)

// AdaptiveConcurrency is a route's adaptive_concurrency: package
// adaptiveconf's Concurrency, which holds its settings, defaults and
// checks.
type AdaptiveConcurrency = adaptiveconf.Concurrency

// validateAdaptiveConcurrency checks every route's adaptive_concurrency.
func (c *Config) validateAdaptiveConcurrency(ps *problems) {
	for i, r := range c.Routes {
		if r.AdaptiveConcurrency == nil {
			continue
		}
		at := fmt.Sprintf("routes[%d].adaptive_concurrency", i)
		if r.Upstream == "demo" {
			ps.Add(c.at(at), "%s: not for the demo upstream", at)
		}
		r.AdaptiveConcurrency.Check(at, func(path, format string, args ...any) {
			ps.Add(c.at(path), "%s: "+format, append([]any{path}, args...)...)
		})
	}
}
