package adaptiveconf

import (
	"strconv"
	"strings"
	"time"
)

// Concurrency (a route's adaptive_concurrency) bounds the requests a route has in flight to its
// upstream by a limit a gradient controller moves with the upstream's
// latency, as Envoy's adaptive_concurrency filter does: minRTT is
// measured with the limit pinned to min_concurrency (the median of
// min_rtt_requests requests, again every min_rtt_interval, jittered);
// every sample_window, sampleRTT is the quantile of the window's
// latencies, gradient = clamp(minRTT × (1 + buffer) / sampleRTT, 0.5,
// 2), and limit = gradient × limit + √(that), within [min_concurrency,
// max_concurrency]. A request beyond the limit waits up to max_delay
// for a place, then is answered 503 with an application/problem+json
// body. The limit starts at min_concurrency. Each gateway has its own.
// It applies to HTTP/1.1 requests (not yet to routes served over
// listen.http2) and not to WebSocket upgrades.
type Concurrency struct {
	// MinConcurrency is the lowest limit, and the limit pinned while
	// minRTT is measured. Default 3.
	MinConcurrency int `yaml:"min_concurrency"`
	// MaxConcurrency is the highest limit. Default 1000.
	MaxConcurrency int `yaml:"max_concurrency"`
	// Buffer is the latency above minRTT still taken as healthy, a
	// percentage of minRTT. Default 25%.
	Buffer string `yaml:"buffer"`
	// Quantile is the quantile of a window's latencies (to the
	// upstream's response head) taken as sampleRTT: "p90", "p50", ...
	// minRTT is their median (or this quantile when lower). Default p90.
	Quantile string `yaml:"quantile"`
	// SampleWindow is the time between two updates of the limit.
	// Default 100ms; at least 10ms.
	SampleWindow time.Duration `yaml:"sample_window"`
	// MinRTTInterval is the time between two measurements of minRTT.
	// Default 30s; at least 1s.
	MinRTTInterval time.Duration `yaml:"min_rtt_interval"`
	// MinRTTRequests is how many requests a measurement of minRTT
	// takes. Default 50.
	MinRTTRequests int `yaml:"min_rtt_requests"`
	// Jitter is the random part added to min_rtt_interval, a percentage
	// of it, so that gateways do not measure at once. Default 10%.
	Jitter string `yaml:"jitter"`
	// MaxDelay is how long a request beyond the limit may wait for a
	// place before it is refused. Default 0: refused at once.
	MaxDelay time.Duration `yaml:"max_delay"`
}

// GradientSettings returns the controller's settings of the route's
// adaptive_concurrency, defaults filled. a must be valid (as Load
// returns it).
func (a *Concurrency) GradientSettings() GradientSettings {
	s, _ := a.Check("", nil)
	return s
}

// Check converts a; bad, when not nil, is told of each problem, at the
// key's path under at.
func (a *Concurrency) Check(at string, bad func(path, format string, args ...any)) (GradientSettings, bool) {
	ok := true
	fail := func(key, format string, args ...any) {
		ok = false
		if bad != nil {
			bad(at+"."+key, format, args...)
		}
	}
	s := GradientSettings{}.WithDefaults()
	if a.MinConcurrency != 0 {
		if a.MinConcurrency < 1 {
			fail("min_concurrency", "%d: want at least 1", a.MinConcurrency)
		}
		s.MinLimit = a.MinConcurrency
	}
	if a.MaxConcurrency != 0 {
		if a.MaxConcurrency < 1 {
			fail("max_concurrency", "%d: want at least 1", a.MaxConcurrency)
		}
		s.MaxLimit = a.MaxConcurrency
	}
	if s.MaxLimit < s.MinLimit {
		fail("max_concurrency", "%d is below min_concurrency %d", s.MaxLimit, s.MinLimit)
	}
	if a.Buffer != "" {
		v, err := parsePercent(a.Buffer)
		if err != nil || v <= 0 || v > 10 {
			fail("buffer", "%q: want a percentage above 0%% and at most 1000%%, such as 25%%", a.Buffer)
		}
		s.Buffer = v
	}
	if a.Quantile != "" {
		q, err := strconv.ParseFloat(strings.TrimPrefix(a.Quantile, "p"), 64)
		if err != nil || !strings.HasPrefix(a.Quantile, "p") || !(q > 0 && q < 100) {
			fail("quantile", "%q: want p50, p90, p99, ...", a.Quantile)
		} else {
			s.Quantile = q / 100
		}
	}
	if a.SampleWindow != 0 {
		if a.SampleWindow < 10*time.Millisecond {
			fail("sample_window", "%v is below the least value of 10ms", a.SampleWindow)
		}
		s.SampleWindow = a.SampleWindow
	}
	if a.MinRTTInterval != 0 {
		if a.MinRTTInterval < time.Second {
			fail("min_rtt_interval", "%v is below the least value of 1s", a.MinRTTInterval)
		}
		s.MinRTTInterval = a.MinRTTInterval
	}
	if a.MinRTTRequests != 0 {
		if a.MinRTTRequests < 1 || a.MinRTTRequests > 10000 {
			fail("min_rtt_requests", "%d: want 1 to 10000", a.MinRTTRequests)
		}
		s.MinRTTRequests = a.MinRTTRequests
	}
	if a.Jitter != "" {
		v, err := parsePercent(a.Jitter)
		if err != nil || v < 0 || v > 1 {
			fail("jitter", "%q: want a percentage from 0%% to 100%%", a.Jitter)
		}
		// 0% means none; the controller reads a negative as none.
		s.Jitter = v
		if v == 0 {
			s.Jitter = -1
		}
	}
	if a.MaxDelay < 0 {
		fail("max_delay", "%v: want 0 or more", a.MaxDelay)
	}
	return s, ok
}
