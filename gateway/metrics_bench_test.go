package gateway

import (
	"testing"

	"github.com/tollgate-dev/tollgate/rules"
)

// BenchmarkObserve is the metrics cost of one refused decision.
func BenchmarkObserve(b *testing.B) {
	m := newMetrics(nil)
	o := m.newObserver(&rules.Config{Rules: []rules.Rule{{Name: "login"}, {Name: "per-ip"}}})
	ev := rules.Event{Rule: "per-ip", RuleIndex: 1, Outcome: rules.Refused}
	for b.Loop() {
		o.Observe(ev)
	}
}
