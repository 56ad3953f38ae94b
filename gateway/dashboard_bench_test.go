package gateway

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

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
	o := g.core.Snap.Load().Observer
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

// BenchmarkDashboardFrame is what an open dashboard costs per period:
// sampling the counters of 5 rules and building the frame, each rule's
// summaries full (256 keys each). At the default period of 1s, its time
// per op is the share of one core the open page takes.
func BenchmarkDashboardFrame(b *testing.B) {
	yaml := demoRoute + "rules:\n"
	for _, r := range []string{"a", "b", "c", "d", "e"} {
		yaml += "  - {name: " + r + ", policies: [{rate: 1/h, burst: 1}]}\n"
	}
	g := newTestGateway(b, yaml)
	s := g.core.Snap.Load()
	for i, t := range s.Tops {
		for k := range 5000 {
			key := strconv.Itoa(k)
			t.Volume.Add(key, uint64(k%97+i), 0)
			t.Refusals.Add(key, uint64(k%89), 0)
		}
	}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		smp := g.dash.Sample(s, now)
		if _, err := g.dash.Frame(s, smp); err != nil {
			b.Fatal(err)
		}
	}
}
