package adaptive

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu        sync.Mutex
	steps     []Outcome
	published []int64
	failures  map[string]int
	fleetErrs int
}

func (r *recorder) Stepped(_ *Settings, out Outcome, _ []Reading, published int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, out)
	r.published = append(r.published, published)
}

func (r *recorder) Failed(s *Settings, i int, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failures == nil {
		r.failures = map[string]int{}
	}
	r.failures[s.Signals[i].Name+"/"+reason]++
}

func (r *recorder) FleetFailed(*Settings, error) { r.fleetErrs++ }

func latencySettings() Settings {
	return Settings{Name: "origin", Interval: time.Second, Signals: []Signal{
		{Name: "latency_p99", Threshold: 0.2, Weight: 1, Source: Source{Measure: Latency, Quantile: 0.99}},
		{Name: "error_rate", Threshold: 5, Weight: 1, Source: Source{Measure: ErrorRate}},
	}}
}

func TestLoopTicksOnMeasuredExchanges(t *testing.T) {
	rec := &recorder{}
	l, err := NewLoop(LoopConfig{Settings: latencySettings(), Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	m := l.Meter()
	at := time.Unix(1_800_000_000, 0)
	exchange := func(n int, took time.Duration, failed bool) {
		for range n {
			m.Begin()
			m.End(took, failed, nil)
		}
	}
	exchange(100, 400*time.Millisecond, false) // p99 at twice the threshold
	out := l.Tick(context.Background(), at)
	// Latency breach 1 (weight 1 of 2): score 0.5, factor ×0.75.
	if out.Factor != 750 || l.Factor().Permille() != 750 {
		t.Fatalf("factor %d (published %d), want 750", out.Factor, l.Factor().Permille())
	}
	exchange(90, 10*time.Millisecond, false)
	exchange(10, 10*time.Millisecond, true) // 10% errors: breach 1
	out = l.Tick(context.Background(), at.Add(time.Second))
	if out.Factor != 562 || !out.Breaches[1] || out.Breaches[0] {
		t.Fatalf("factor %d breaches %v, want 562 from errors only", out.Factor, out.Breaches)
	}
	// No traffic: healthy, recovers.
	out = l.Tick(context.Background(), at.Add(2*time.Second))
	if out.Factor != 612 || out.Direction != Recovering {
		t.Fatalf("factor %d %v, want 612 recovering", out.Factor, out.Direction)
	}
	if len(rec.steps) != 3 || rec.published[2] != 612 {
		t.Fatalf("observer saw %d steps, published %v", len(rec.steps), rec.published)
	}
}

// A source that is down, slow or answers garbage holds the factor (or,
// with on_missing tighten, moves it toward the floor) and is counted;
// the factor never leaves [floor, base].
func TestLoopBadSources(t *testing.T) {
	var mode atomic.Value
	mode.Store("good")
	release := make(chan struct{})
	defer close(release)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch mode.Load() {
		case "good":
			w.Write([]byte("queue 10\n"))
		case "busy":
			w.Write([]byte("queue 400\n"))
		case "slow":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "garbage":
			w.Write([]byte("queue {{ 7\n"))
		case "nan":
			w.Write([]byte("queue NaN\n"))
		case "500":
			w.WriteHeader(500)
		}
	}))
	defer origin.Close()
	for _, missing := range []Missing{Hold, Tighten} {
		t.Run(missing.String(), func(t *testing.T) {
			rec := &recorder{}
			s := Settings{Name: "o", Interval: time.Second, Floor: 200, OnMissing: missing, Signals: []Signal{{
				Name: "prometheus:queue", Threshold: 100, Weight: 1,
				Source: Source{Measure: Prometheus, URL: origin.URL, Metric: "queue", Timeout: 50 * time.Millisecond},
			}}}
			l, err := NewLoop(LoopConfig{Settings: s, Observer: rec})
			if err != nil {
				t.Fatal(err)
			}
			at := time.Unix(1_800_000_000, 0)
			tick := func(m string) int64 {
				mode.Store(m)
				at = at.Add(time.Second)
				out := l.Tick(context.Background(), at)
				if out.Factor < 200 || out.Factor > Base {
					t.Fatalf("factor %d outside [200, 1000]", out.Factor)
				}
				return out.Factor
			}
			if f := tick("busy"); f != 500 {
				t.Fatalf("busy: %d, want 500", f)
			}
			for _, m := range []string{"slow", "garbage", "nan", "500"} {
				f := tick(m)
				if missing == Hold && f != 500 {
					t.Fatalf("%s under hold moved the factor to %d", m, f)
				}
				if missing == Tighten && f != 200 && f >= 500 {
					t.Fatalf("%s under tighten left the factor at %d", m, f)
				}
			}
			want := map[string]int{"prometheus:queue/timeout": 1, "prometheus:queue/garbage": 2, "prometheus:queue/down": 1}
			for k, n := range want {
				if rec.failures[k] != n {
					t.Errorf("failures %v, want %v", rec.failures, want)
					break
				}
			}
			if f := tick("good"); f <= 200 && missing == Hold {
				t.Fatalf("good after failures: %d", f)
			}
		})
	}
	origin.CloseClientConnections()
}

func TestLoopHeaderFailures(t *testing.T) {
	rec := &recorder{}
	s := Settings{Name: "h", Signals: []Signal{{Name: "header:X-Q", Threshold: 50, Weight: 1, Source: Source{Measure: Header, Header: "X-Q"}}}}
	l, err := NewLoop(LoopConfig{Settings: s, Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	m := l.Meter()
	at := time.Unix(1_800_000_000, 0)
	// No exchange and no value yet: no evidence, no failure.
	if out := l.Tick(context.Background(), at); out.Factor != Base || out.Missing != 0 {
		t.Fatalf("idle start: %+v", out)
	}
	m.Begin()
	m.End(time.Millisecond, false, []byte("garbage"))
	if out := l.Tick(context.Background(), at.Add(time.Second)); out.Missing != 1 || out.Factor != Base {
		t.Fatalf("garbage header: %+v", out)
	}
	m.Begin()
	m.End(time.Millisecond, false, nil)
	l.Tick(context.Background(), at.Add(2*time.Second))
	m.Begin()
	m.End(time.Millisecond, false, []byte("100"))
	if out := l.Tick(context.Background(), at.Add(3*time.Second)); out.Factor != 500 {
		t.Fatalf("header at twice the threshold: %+v", out)
	}
	if rec.failures["header:X-Q/garbage"] != 1 || rec.failures["header:X-Q/absent"] != 1 {
		t.Fatalf("failures %v", rec.failures)
	}
}

// sharedFleet is an in-process Fleet, for the loop's arithmetic; the
// Redis fleet is tested against a real redis-server.
func TestLoopAdoptsTheFleetsLowerFactor(t *testing.T) {
	fl := newSharedFleet()
	s := latencySettings()
	s.FleetTier = FleetRedis
	a, _ := NewLoop(LoopConfig{Settings: s, Fleet: fl.node("a")})
	b, _ := NewLoop(LoopConfig{Settings: s, Fleet: fl.node("b")})
	at := time.Unix(1_800_000_000, 0)
	for range 100 {
		a.Meter().Begin()
		a.Meter().End(time.Second, false, nil)
	}
	a.Tick(context.Background(), at)
	b.Tick(context.Background(), at)
	if a.Factor().Permille() != 750 || b.Factor().Permille() != Base {
		t.Fatalf("after a's cut: a %d b %d", a.Factor().Permille(), b.Factor().Permille())
	}
	b.Poll(context.Background(), at.Add(250*time.Millisecond))
	if b.Factor().Permille() != 750 {
		t.Fatalf("b after polling: %d, want a's 750", b.Factor().Permille())
	}
	// b's next step starts from the fleet's factor.
	out := b.Tick(context.Background(), at.Add(time.Second))
	if out.Factor != 800 {
		t.Fatalf("b's step from 750, healthy: %d, want 800", out.Factor)
	}
	// A stale entry no longer counts.
	b.Poll(context.Background(), at.Add(10*time.Second))
	if b.Factor().Permille() != 800 {
		t.Fatalf("b after a's entry went stale: %d", b.Factor().Permille())
	}
}

type sharedFleet struct {
	mu      sync.Mutex
	entries map[string]map[string]fleetEntry
}

type fleetEntry struct {
	f  int64
	at time.Time
}

func newSharedFleet() *sharedFleet {
	return &sharedFleet{entries: map[string]map[string]fleetEntry{}}
}

type fleetNode struct {
	s    *sharedFleet
	node string
}

func (s *sharedFleet) node(n string) Fleet { return fleetNode{s, n} }

func (n fleetNode) Publish(_ context.Context, name string, f int64, now time.Time) error {
	n.s.mu.Lock()
	defer n.s.mu.Unlock()
	if n.s.entries[name] == nil {
		n.s.entries[name] = map[string]fleetEntry{}
	}
	n.s.entries[name][n.node] = fleetEntry{f, now}
	return nil
}

func (n fleetNode) Lowest(_ context.Context, name string, now time.Time, maxAge time.Duration) (int64, bool, error) {
	n.s.mu.Lock()
	defer n.s.mu.Unlock()
	low, ok := int64(0), false
	for _, e := range n.s.entries[name] {
		if now.Sub(e.at) <= maxAge && (!ok || e.f < low) {
			low, ok = e.f, true
		}
	}
	return low, ok, nil
}
