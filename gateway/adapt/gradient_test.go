package adapt

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tollgate-dev/tollgate/config"
)

func newTestConcLimits(t *testing.T) *ConcLimits {
	t.Helper()
	return NewConcLimits(prometheus.NewRegistry())
}

// A request beyond the limit waits up to max_delay for a place: it
// takes the one a release frees, or is refused (and counted) when none
// does in time.
func TestConcLimitWaitsMaxDelay(t *testing.T) {
	cs := newTestConcLimits(t)
	// min_concurrency 1: one place while minRTT is measured.
	l := cs.ForRoute("/", &config.AdaptiveConcurrency{MinConcurrency: 1, MaxDelay: 2 * time.Second})
	if !l.Acquire() {
		t.Fatal("first acquire refused")
	}
	got := make(chan bool)
	go func() { got <- l.Acquire() }()
	time.Sleep(20 * time.Millisecond)
	began := time.Now()
	l.Release(began)
	select {
	case ok := <-got:
		if !ok {
			t.Fatal("the waiter was refused though a place was freed")
		}
	case <-time.After(time.Second):
		t.Fatal("the waiter did not take the freed place")
	}

	l.MaxDelay = 50 * time.Millisecond
	start := time.Now()
	if l.Acquire() {
		t.Fatal("acquired beyond the limit")
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("refused after %v, want after max_delay 50ms", d)
	}
	var m dto.Metric
	if err := l.Refused.Write(&m); err != nil {
		t.Fatal(err)
	}
	if n := m.GetCounter().GetValue(); n != 1 {
		t.Fatalf("refused counter %v, want 1", n)
	}
	l.Release(time.Now())
}

// When the limit rises by several places at once, every waiter that now
// fits goes at once, not one per release with the others waiting out
// max_delay.
func TestConcLimitRiseWakesEveryWaiterThatFits(t *testing.T) {
	cs := newTestConcLimits(t)
	l := cs.ForRoute("/", &config.AdaptiveConcurrency{
		MinConcurrency: 1, MaxConcurrency: 10, MinRTTRequests: 1,
		SampleWindow: time.Millisecond, MinRTTInterval: time.Hour, MaxDelay: 10 * time.Second,
	})
	// minRTT measured on one request of 10 ms: the limit stays 1.
	if !l.Acquire() {
		t.Fatal("first acquire refused")
	}
	l.Release(time.Now().Add(-10 * time.Millisecond))
	if !l.Acquire() {
		t.Fatal("second acquire refused")
	}
	const waiters = 2
	got := make(chan time.Time, waiters)
	for range waiters {
		go func() {
			if l.Acquire() {
				got <- time.Now()
			}
		}()
	}
	time.Sleep(100 * time.Millisecond) // the waiters wait; the window ends
	// A 1 ms request against a 10 ms minRTT: the gradient is 2, the limit
	// goes from 1 to 3 (2 + √2) in one release, room for both waiters.
	released := time.Now()
	l.Release(released.Add(-time.Millisecond))
	if st := l.Ctl.State(); st.Limit != 3 {
		t.Fatalf("limit %d after the window, want 3", st.Limit)
	}
	for range waiters {
		select {
		case at := <-got:
			if d := at.Sub(released); d > 2*time.Second {
				t.Errorf("a waiter went %v after the rise", d)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a waiter is still waiting 5 s after the limit rose to fit it")
		}
	}
}

// A reload with the same settings keeps the controller; other settings
// make a new one.
func TestConcLimitKeptAcrossReload(t *testing.T) {
	cs := newTestConcLimits(t)
	a := cs.ForRoute("/", &config.AdaptiveConcurrency{MaxConcurrency: 50})
	if b := cs.ForRoute("/", &config.AdaptiveConcurrency{MaxConcurrency: 50}); b != a {
		t.Fatal("same settings: a new controller")
	}
	if b := cs.ForRoute("/", &config.AdaptiveConcurrency{MaxConcurrency: 60}); b == a {
		t.Fatal("new settings: the old controller")
	}
}

func TestConcLimitNoAllocs(t *testing.T) {
	cs := newTestConcLimits(t)
	l := cs.ForRoute("/", &config.AdaptiveConcurrency{MinRTTRequests: 1, SampleWindow: 10 * time.Millisecond})
	allocs := testing.AllocsPerRun(1000, func() {
		if l.Acquire() {
			l.Release(time.Now())
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per request, want 0", allocs)
	}
}
