package adaptive

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// maxGradientSamples bounds the latencies a Gradient keeps per sample
// window; past it, new ones overwrite the oldest (a window that busy
// has plenty for its quantile).
const maxGradientSamples = 4096

// Gradient is a gradient concurrency controller, as Envoy's
// adaptive_concurrency filter and Netflix's concurrency-limits Gradient
// are: it bounds the requests in flight to an upstream by a limit it
// moves with the upstream's latency.
//
// It first measures minRTT, the latency of an idle upstream: with the
// limit pinned to MinLimit, the median of MinRTTRequests requests'
// latencies (again every MinRTTInterval, jittered). Then, every
// SampleWindow, sampleRTT is the Quantile of the window's latencies and
//
//	gradient = clamp(minRTT × (1 + Buffer) / sampleRTT, 0.5, 2)
//	limit    = gradient × limit
//	limit    = clamp(limit + √limit, MinLimit, MaxLimit)
//
// so the limit grows (by up to 2× and a headroom of √limit) while the
// latency stays within the buffer of minRTT, and shrinks (by up to
// half) as queueing at the upstream stretches it. A window without
// requests leaves the limit as it is, and so does a healthy window that
// never had half the limit in flight (as Netflix's Gradient2 does): a
// quiet hour does not raise the limit to MaxLimit, for the next flash
// crowd to flood the upstream with. The limit starts at MinLimit.
//
// Acquire and Release are called around every exchange with the
// upstream, from any goroutine, with the time; the controller runs in
// them (no goroutine of its own), which makes it testable with a fake
// clock. Neither allocates.
type Gradient struct {
	s GradientSettings

	mu         sync.Mutex
	rng        *rand.Rand
	limit      float64
	inFlight   int
	peak       int  // the most in flight in the window
	measuring  bool // measuring minRTT: limit pinned to MinLimit
	minRTT     time.Duration
	sampleRTT  time.Duration
	nextMinRTT time.Time // when the next measurement of minRTT starts
	windowEnd  time.Time // zero until the first sample of a window
	samples    []float64 // latencies (seconds) of the window or measurement
	n          int       // samples seen, including overwritten ones
	scratch    []float64
}

// NewGradient returns a controller with s (defaults filled); seed
// drives the jitter.
func NewGradient(s GradientSettings, seed uint64) *Gradient {
	s = s.WithDefaults()
	capacity := max(maxGradientSamples, s.MinRTTRequests)
	return &Gradient{
		s:         s,
		rng:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		limit:     float64(s.MinLimit),
		measuring: true,
		samples:   make([]float64, 0, capacity),
		scratch:   make([]float64, 0, capacity),
	}
}

// Settings returns the controller's settings, defaults filled.
func (g *Gradient) Settings() GradientSettings { return g.s }

// GradientState is what a Gradient shows of itself.
type GradientState struct {
	// Limit is the concurrency limit in force (MinLimit while
	// measuring minRTT).
	Limit int
	// InFlight is the number of requests acquired and not released.
	InFlight int
	// MinRTT is the last measured minRTT, 0 before the first.
	MinRTT time.Duration
	// SampleRTT is the last window's sample RTT, 0 before the first.
	SampleRTT time.Duration
	// Measuring is true while minRTT is being measured.
	Measuring bool
}

// State returns the controller's state.
func (g *Gradient) State() GradientState {
	g.mu.Lock()
	defer g.mu.Unlock()
	return GradientState{
		Limit: g.current(), InFlight: g.inFlight,
		MinRTT: g.minRTT, SampleRTT: g.sampleRTT, Measuring: g.measuring,
	}
}

// current is the limit in force. g.mu is held.
func (g *Gradient) current() int {
	if g.measuring {
		return g.s.MinLimit
	}
	return int(g.limit)
}

// Acquire takes a place for a request if fewer than the limit are in
// flight, and reports whether it did. A true must be matched by one
// Release.
func (g *Gradient) Acquire() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight >= g.current() {
		return false
	}
	g.inFlight++
	g.peak = max(g.peak, g.inFlight)
	return true
}

// Cancel gives back a place Acquire took without a sample: the request
// did not end by the upstream's doing (its client's body failed, the
// gateway's own limit refused it), so its time says nothing of the
// upstream's latency.
func (g *Gradient) Cancel() {
	g.mu.Lock()
	g.inFlight--
	g.mu.Unlock()
}

// Release gives back a place Acquire took: the request ended at now,
// after took with the upstream. It reports whether the limit or minRTT
// changed (for metrics).
func (g *Gradient) Release(now time.Time, took time.Duration) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inFlight--
	g.add(took.Seconds())
	if g.measuring {
		if g.n < g.s.MinRTTRequests {
			return false
		}
		g.minRTT = secondsDuration(g.quantileAt(min(g.s.Quantile, 0.5)))
		g.measuring = false
		g.nextMinRTT = now.Add(g.jittered())
		g.reset(now)
		return true
	}
	if g.windowEnd.IsZero() {
		g.windowEnd = now.Add(g.s.SampleWindow)
		return false
	}
	if now.Before(g.windowEnd) {
		return false
	}
	g.step(g.quantileAt(g.s.Quantile))
	if !now.Before(g.nextMinRTT) {
		g.measuring = true
		g.reset(time.Time{})
	} else {
		g.reset(now)
	}
	return true
}

// step moves the limit for a window whose sample RTT is sample
// (seconds). g.mu is held.
func (g *Gradient) step(sample float64) {
	g.sampleRTT = secondsDuration(sample)
	minRTT := g.minRTT.Seconds()
	gradient := 2.0
	if sample > 0 {
		gradient = min(max(minRTT*(1+g.s.Buffer)/sample, 0.5), 2)
	}
	if gradient >= 1 && float64(g.peak) < g.limit/2 {
		return // not using half of it: no reason to raise it
	}
	l := gradient * g.limit
	l += math.Sqrt(l)
	g.limit = min(max(l, float64(g.s.MinLimit)), float64(g.s.MaxLimit))
}

// add records a latency. g.mu is held.
func (g *Gradient) add(secs float64) {
	secs = max(secs, 0)
	if len(g.samples) < cap(g.samples) {
		g.samples = append(g.samples, secs)
	} else {
		g.samples[g.n%len(g.samples)] = secs
	}
	g.n++
}

// reset empties the samples; a zero now leaves the window to start
// at the next sample.
func (g *Gradient) reset(now time.Time) {
	g.samples = g.samples[:0]
	g.n = 0
	g.peak = g.inFlight
	g.windowEnd = time.Time{}
	if !now.IsZero() {
		g.windowEnd = now.Add(g.s.SampleWindow)
	}
}

// quantileAt is the quantile q of the samples (seconds), 0 for none.
// g.mu is held.
func (g *Gradient) quantileAt(q float64) float64 {
	if len(g.samples) == 0 {
		return 0
	}
	g.scratch = append(g.scratch[:0], g.samples...)
	slices.Sort(g.scratch)
	i := int(math.Ceil(q*float64(len(g.scratch)))) - 1
	return g.scratch[min(max(i, 0), len(g.scratch)-1)]
}

// jittered is the time to the next measurement of minRTT.
func (g *Gradient) jittered() time.Duration {
	return g.s.MinRTTInterval + time.Duration(g.rng.Float64()*g.s.Jitter*float64(g.s.MinRTTInterval))
}

func secondsDuration(s float64) time.Duration {
	return time.Duration(s * float64(time.Second))
}
