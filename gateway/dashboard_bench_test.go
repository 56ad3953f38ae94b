package gateway

import (
	"path/filepath"
	"testing"

	"github.com/tollgate-dev/tollgate/rules"
)

// The request path's cost of the dashboard's heavy hitters and of the
// refusal log, against the same refusing rule without them: run them
// interleaved (-count) and compare. BenchmarkServeRuleDeny has the
// dashboard on (the default).
func BenchmarkServeRuleDenyNoDashboard(b *testing.B) {
	benchServe(b, demoRoute+alwaysRefuse+"admin: {dashboard: {enabled: false}}\n")
}

func BenchmarkServeRuleDenyRefusalLog(b *testing.B) {
	benchServe(b, demoRoute+alwaysRefuse+"refusal_log: {path: "+filepath.Join(b.TempDir(), "r.log")+"}\n")
}

func BenchmarkServeRuleAllowNoDashboard(b *testing.B) {
	benchServe(b, demoRoute+neverRefuse+"admin: {dashboard: {enabled: false}}\n")
}

// benchObserve measures one refused event through the snapshot's
// observer: the metrics' own (dashboard off) or the one that also feeds
// the heavy hitters (and the refusal log).
func benchObserve(b *testing.B, yaml string) {
	g := newTestGateway(b, demoRoute+alwaysRefuse+yaml)
	o := g.snap.Load().observer
	ev := rulesEvent("203.0.113.7")
	b.ReportAllocs()
	for b.Loop() {
		o.Observe(ev)
	}
}

func BenchmarkObserveMetricsOnly(b *testing.B) {
	benchObserve(b, "admin: {dashboard: {enabled: false}}\n")
}
func BenchmarkObserveHeavyHitters(b *testing.B) { benchObserve(b, "") }
func BenchmarkObserveHeavyHittersRefusalLog(b *testing.B) {
	benchObserve(b, "refusal_log: {path: "+filepath.Join(b.TempDir(), "r.log")+"}\n")
}

// rulesEvent is a refusal of the per-ip rule for key.
func rulesEvent(key string) rules.Event {
	return rules.Event{Rule: "per-ip", RuleIndex: 0, Policy: "per-ip", Outcome: rules.Refused, Decisive: true, Key: key}
}
