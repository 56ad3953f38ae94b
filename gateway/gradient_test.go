package gateway

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tollgate-dev/tollgate/config"
)

func newTestConcLimits(t *testing.T) *concLimits {
	t.Helper()
	g := &Gateway{m: &metrics{reg: prometheus.NewRegistry()}}
	g.initConcLimits()
	return &g.concs
}

// A request beyond the limit waits up to max_delay for a place: it
// takes the one a release frees, or is refused (and counted) when none
// does in time.
func TestConcLimitWaitsMaxDelay(t *testing.T) {
	cs := newTestConcLimits(t)
	// min_concurrency 1: one place while minRTT is measured.
	l := cs.forRoute("/", &config.AdaptiveConcurrency{MinConcurrency: 1, MaxDelay: 2 * time.Second})
	if !l.acquire() {
		t.Fatal("first acquire refused")
	}
	got := make(chan bool)
	go func() { got <- l.acquire() }()
	time.Sleep(20 * time.Millisecond)
	began := time.Now()
	l.release(began)
	select {
	case ok := <-got:
		if !ok {
			t.Fatal("the waiter was refused though a place was freed")
		}
	case <-time.After(time.Second):
		t.Fatal("the waiter did not take the freed place")
	}

	l.maxDelay = 50 * time.Millisecond
	start := time.Now()
	if l.acquire() {
		t.Fatal("acquired beyond the limit")
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("refused after %v, want after max_delay 50ms", d)
	}
	var m dto.Metric
	if err := l.refused.Write(&m); err != nil {
		t.Fatal(err)
	}
	if n := m.GetCounter().GetValue(); n != 1 {
		t.Fatalf("refused counter %v, want 1", n)
	}
	l.release(time.Now())
}

// A reload with the same settings keeps the controller; other settings
// make a new one.
func TestConcLimitKeptAcrossReload(t *testing.T) {
	cs := newTestConcLimits(t)
	a := cs.forRoute("/", &config.AdaptiveConcurrency{MaxConcurrency: 50})
	if b := cs.forRoute("/", &config.AdaptiveConcurrency{MaxConcurrency: 50}); b != a {
		t.Fatal("same settings: a new controller")
	}
	if b := cs.forRoute("/", &config.AdaptiveConcurrency{MaxConcurrency: 60}); b == a {
		t.Fatal("new settings: the old controller")
	}
}

func TestConcLimitNoAllocs(t *testing.T) {
	cs := newTestConcLimits(t)
	l := cs.forRoute("/", &config.AdaptiveConcurrency{MinRTTRequests: 1, SampleWindow: 10 * time.Millisecond})
	allocs := testing.AllocsPerRun(1000, func() {
		if l.acquire() {
			l.release(time.Now())
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per request, want 0", allocs)
	}
}
