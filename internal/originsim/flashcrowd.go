package originsim

import "time"

// FlashCrowd is the adaptive limits' flash-crowd scenario, the one that
// gateway's TestAdaptiveLimitFollowsTheOrigin and bench/flashcrowd both
// run: a simulated origin pushed past its capacity, watched by an
// adaptive controller named "origin" that cuts on the origin's p99
// latency, its requests in flight (over 8) and its error rate (over 5%),
// to a floor of 5% of the base, recovering 5% a step.
type FlashCrowd struct {
	// Origin is the simulated origin's shape.
	Origin Config
	// Interval is the controller's step.
	Interval time.Duration
	// Threshold is the p99 latency over which the controller cuts, and
	// the p99 the origin should come back under.
	Threshold time.Duration
}

// Controller is the YAML of the scenario's `adaptive:` section, for the
// origin at upstream (its URL).
func (f FlashCrowd) Controller(upstream string) string {
	return `adaptive:
  origin:
    upstream: "` + upstream + `"
    interval: ` + f.Interval.String() + `
    floor: 5%
    recovery: 5%
    signals:
      - {measure: latency, quantile: p99, threshold: ` + f.Threshold.String() + `}
      - {measure: in_flight, threshold: "8"}
      - {measure: error_rate, threshold: 5%}
`
}
