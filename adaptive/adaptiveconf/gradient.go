package adaptiveconf

import "time"

// GradientSettings are a Gradient's parameters, as Envoy's
// adaptive_concurrency filter names them. Zero values take the
// defaults given.
type GradientSettings struct {
	// MinLimit is the lowest concurrency limit, and the limit the
	// controller pins while it measures minRTT. Default 3.
	MinLimit int
	// MaxLimit is the highest concurrency limit. Default 1000.
	MaxLimit int
	// Buffer is the latency above minRTT still taken as healthy, a
	// fraction of minRTT. Default 0.25.
	Buffer float64
	// Quantile is the quantile of the latencies of a window taken as
	// its sample RTT. minRTT is the median of its measurement's (or this
	// quantile when lower): a straggler, a pause of the gateway's own,
	// does not inflate it. Default 0.9.
	Quantile float64
	// SampleWindow is the time between two updates of the limit.
	// Default 100ms.
	SampleWindow time.Duration
	// MinRTTInterval is the time between two measurements of minRTT.
	// Default 30s.
	MinRTTInterval time.Duration
	// MinRTTRequests is how many requests one measurement of minRTT
	// takes. Default 50.
	MinRTTRequests int
	// Jitter is the random part of MinRTTInterval, a fraction of it: a
	// measurement starts after MinRTTInterval × (1 + u × Jitter), u
	// uniform in [0, 1), so that a fleet of gateways does not pin its
	// limits at once. Default 0.1.
	Jitter float64
}

// WithDefaults returns s with its zero values set to the defaults.
func (s GradientSettings) WithDefaults() GradientSettings {
	if s.MinLimit <= 0 {
		s.MinLimit = 3
	}
	if s.MaxLimit <= 0 {
		s.MaxLimit = 1000
	}
	s.MaxLimit = max(s.MaxLimit, s.MinLimit)
	if s.Buffer <= 0 {
		s.Buffer = 0.25
	}
	if s.Quantile <= 0 || s.Quantile >= 1 {
		s.Quantile = 0.9
	}
	if s.SampleWindow <= 0 {
		s.SampleWindow = 100 * time.Millisecond
	}
	if s.MinRTTInterval <= 0 {
		s.MinRTTInterval = 30 * time.Second
	}
	if s.MinRTTRequests <= 0 {
		s.MinRTTRequests = 50
	}
	if s.Jitter < 0 {
		s.Jitter = 0
	} else if s.Jitter == 0 {
		s.Jitter = 0.1
	}
	return s
}
