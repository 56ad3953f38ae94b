package adaptive

import (
	"math"
	"testing"
	"time"
)

// gradientClock drives a Gradient with a fake clock.
type gradientClock struct {
	t   *testing.T
	g   *Gradient
	now time.Time
}

func newGradientClock(t *testing.T, s GradientSettings) *gradientClock {
	return &gradientClock{t: t, g: NewGradient(s, 1), now: time.Unix(1_700_000_000, 0)}
}

// requests runs n requests one after the other, each taking took, and
// advances the clock by each.
func (c *gradientClock) requests(n int, took time.Duration) {
	c.t.Helper()
	for range n {
		if !c.g.Acquire() {
			c.t.Fatalf("Acquire refused with nothing in flight (state %+v)", c.g.State())
		}
		c.now = c.now.Add(took)
		c.g.Release(c.now, took)
	}
}

// window runs rounds of requests across one sample window, each
// round as many at once as the limit allows, each taking took, until
// the one that closes the window.
func (c *gradientClock) window(took time.Duration) {
	c.t.Helper()
	end := c.now.Add(c.g.Settings().SampleWindow)
	for c.now.Before(end) {
		n := 0
		for c.g.Acquire() {
			n++
		}
		if n == 0 {
			c.t.Fatalf("no place with nothing in flight (state %+v)", c.g.State())
		}
		c.now = c.now.Add(took)
		// All but the last a nanosecond early: the last one closes the
		// window, with the round's latencies in it.
		for range n - 1 {
			c.g.Release(c.now.Add(-time.Nanosecond), took)
		}
		c.g.Release(c.now, took)
	}
}

func TestGradientMeasuresMinRTTWithLimitPinned(t *testing.T) {
	c := newGradientClock(t, GradientSettings{MinLimit: 2, MaxLimit: 100, MinRTTRequests: 10, Quantile: 0.5})
	st := c.g.State()
	if !st.Measuring || st.Limit != 2 {
		t.Fatalf("start: %+v, want measuring with limit 2", st)
	}
	// Pinned: a third request waits for nothing, it is refused.
	got := 0
	for range 3 {
		if c.g.Acquire() {
			got++
		}
	}
	if got != 2 {
		t.Fatalf("%d places while measuring minRTT, want 2", got)
	}
	c.g.Release(c.now, 10*time.Millisecond)
	c.g.Release(c.now, 10*time.Millisecond)
	for i := range 8 {
		c.requests(1, time.Duration(10+i)*time.Millisecond)
	}
	st = c.g.State()
	// Latencies 10,10,10..17ms: the median is 12ms.
	if st.Measuring || st.MinRTT != 12*time.Millisecond {
		t.Fatalf("after 10 requests: %+v, want minRTT 12ms, measuring over", st)
	}
}

func TestGradientRisesAtMinRTT(t *testing.T) {
	c := newGradientClock(t, GradientSettings{MinLimit: 4, MaxLimit: 1000, MinRTTRequests: 5})
	c.requests(5, 10*time.Millisecond)
	c.window(10 * time.Millisecond)
	// gradient = 10ms × 1.25 / 10ms = 1.25; 4 × 1.25 = 5; 5 + √5 = 7.24.
	if got := c.g.State(); got.Limit != 7 || got.SampleRTT != 10*time.Millisecond {
		t.Fatalf("after one window at minRTT: %+v, want limit 7, sample 10ms", got)
	}
	want := 5 + math.Sqrt(5)
	for range 4 {
		c.window(10 * time.Millisecond)
		want *= 1.25
		want += math.Sqrt(want)
	}
	if got := c.g.State().Limit; got != int(want) {
		t.Fatalf("after five windows: limit %d, want %d", got, int(want))
	}
}

func TestGradientFallsWhenLatencyDoubles(t *testing.T) {
	c := newGradientClock(t, GradientSettings{MinLimit: 1, MaxLimit: 1000, MinRTTRequests: 5})
	c.requests(5, 10*time.Millisecond)
	for c.g.State().Limit < 200 {
		c.window(10 * time.Millisecond)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	before := c.g.limit // same package: the unrounded limit
	c.window(20 * time.Millisecond)
	// gradient = 10ms × 1.25 / 20ms = 0.625.
	want := 0.625 * before
	want += math.Sqrt(want)
	if !near(c.g.limit, want) || c.g.limit >= before {
		t.Fatalf("latency doubled: limit %v from %v, want %v", c.g.limit, before, want)
	}
	// The gradient's floor: ten times minRTT halves the limit (plus headroom).
	before = c.g.limit
	c.window(100 * time.Millisecond)
	want = 0.5 * before
	want += math.Sqrt(want)
	if !near(c.g.limit, want) {
		t.Fatalf("latency ×10: limit %v from %v, want %v (gradient floored at 0.5)", c.g.limit, before, want)
	}
}

func TestGradientClamps(t *testing.T) {
	c := newGradientClock(t, GradientSettings{MinLimit: 5, MaxLimit: 40, MinRTTRequests: 5, MinRTTInterval: time.Hour})
	c.requests(5, 10*time.Millisecond)
	for range 30 {
		c.window(5 * time.Millisecond) // faster than minRTT: gradient 2
	}
	if got := c.g.State().Limit; got != 40 {
		t.Fatalf("limit %d, want the max 40", got)
	}
	for range 30 {
		c.window(time.Second)
	}
	if got := c.g.State().Limit; got != 5 {
		t.Fatalf("limit %d, want the min 5", got)
	}
}

func TestGradientRecalculatesMinRTT(t *testing.T) {
	c := newGradientClock(t, GradientSettings{
		MinLimit: 2, MaxLimit: 100, MinRTTRequests: 5,
		MinRTTInterval: time.Second, Jitter: 0.5,
	})
	c.requests(5, 10*time.Millisecond)
	measured := c.now
	for c.g.State().Limit < 50 {
		c.window(10 * time.Millisecond)
	}
	for !c.g.State().Measuring {
		c.requests(1, 10*time.Millisecond) // the limit held meanwhile
		if c.now.Sub(measured) > 2*time.Second {
			t.Fatal("no new measurement of minRTT within interval × (1 + jitter) and a window")
		}
	}
	// It starts at the first window's end past 1s × (1 + u/2).
	if d := c.now.Sub(measured); d < time.Second {
		t.Fatalf("new measurement after %v, want at least the 1s interval", d)
	}
	if got := c.g.State().Limit; got != 2 {
		t.Fatalf("measuring: limit %d, want pinned to 2", got)
	}
	// The upstream got slower: the new minRTT is 30ms, and the limit
	// resumes where it was.
	c.requests(5, 30*time.Millisecond)
	st := c.g.State()
	if st.Measuring || st.MinRTT != 30*time.Millisecond || st.Limit < 50 {
		t.Fatalf("after the new measurement: %+v, want minRTT 30ms and the limit back", st)
	}
}

func TestGradientJitterVaries(t *testing.T) {
	s := GradientSettings{MinRTTInterval: 10 * time.Second, Jitter: 0.2}
	g := NewGradient(s, 7)
	seen := map[time.Duration]bool{}
	for range 20 {
		d := g.jittered()
		if d < 10*time.Second || d >= 12*time.Second {
			t.Fatalf("jittered %v, want in [10s, 12s)", d)
		}
		seen[d] = true
	}
	if len(seen) < 10 {
		t.Fatalf("%d distinct intervals in 20, want jitter", len(seen))
	}
}

func TestGradientNoAllocs(t *testing.T) {
	c := newGradientClock(t, GradientSettings{MinRTTRequests: 5, SampleWindow: time.Millisecond})
	c.requests(5, time.Millisecond)
	allocs := testing.AllocsPerRun(1000, func() {
		if c.g.Acquire() {
			c.now = c.now.Add(300 * time.Microsecond)
			c.g.Release(c.now, 300*time.Microsecond)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per request, want 0", allocs)
	}
}

// A healthy window that never used half the limit leaves it: a quiet
// spell does not raise it to the max.
func TestGradientHoldsAnUnusedLimit(t *testing.T) {
	c := newGradientClock(t, GradientSettings{MinLimit: 4, MaxLimit: 1000, MinRTTRequests: 5})
	c.requests(5, 10*time.Millisecond)
	for range 5 {
		c.window(10 * time.Millisecond)
	}
	before := c.g.State().Limit
	for range 20 {
		c.requests(20, 10*time.Millisecond) // one at a time: 2 windows each
	}
	if got := c.g.State().Limit; got != before {
		t.Fatalf("one request at a time: limit %d, want it held at %d", got, before)
	}
	// It still falls when the latency grows.
	c.requests(20, 40*time.Millisecond)
	if got := c.g.State().Limit; got >= before {
		t.Fatalf("latency ×4: limit %d, want below %d", got, before)
	}
}
