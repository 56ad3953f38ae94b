package adaptiveconf

import (
	"strconv"
	"time"
)

// Measure is what a signal measures.
type Measure uint8

// The measures. The first three the gateway takes itself from the
// responses it proxies to the controller's upstream; the last two the
// origin reports.
const (
	// Latency is a quantile of the upstream's response time over the
	// interval, in seconds (from a DDSketch of the interval's exchanges).
	Latency Measure = iota + 1
	// ErrorRate is the percentage of the interval's exchanges that failed:
	// a 5xx response, or no response (connection refused, reset, timed
	// out).
	ErrorRate
	// InFlight is the number of requests being proxied to the upstream,
	// at the end of the interval.
	InFlight
	// Header is the last value of a response header field the upstream
	// sets (a CPU or queue-depth percentage, say) seen in the interval.
	Header
	// Prometheus is a gauge or counter of the origin's Prometheus
	// endpoint, scraped every interval.
	Prometheus
)

var measureNames = [...]string{
	Latency:    "latency",
	ErrorRate:  "error_rate",
	InFlight:   "in_flight",
	Header:     "header",
	Prometheus: "prometheus",
}

// String names m as configuration spells it.
func (m Measure) String() string {
	if int(m) < len(measureNames) && measureNames[m] != "" {
		return measureNames[m]
	}
	return "Measure(" + strconv.Itoa(int(m)) + ")"
}

// ParseMeasure returns the measure named s, or false.
func ParseMeasure(s string) (Measure, bool) {
	for m, name := range measureNames {
		if name != "" && name == s {
			return Measure(m), true
		}
	}
	return 0, false
}

// MeasureNames lists the measures' names, for messages.
func MeasureNames() []string { return append([]string(nil), measureNames[1:]...) }

// Source says where a signal's readings come from.
type Source struct {
	// Measure is what is measured.
	Measure Measure
	// Quantile is Latency's quantile, in (0, 1).
	Quantile float64
	// Header is Header's field name.
	Header string
	// URL is Prometheus's endpoint.
	URL string
	// Metric is Prometheus's metric family name.
	Metric string
	// Labels select Prometheus's series: every one must match. The first
	// matching series is read.
	Labels map[string]string
	// Timeout bounds one scrape. Zero means half the interval.
	Timeout time.Duration
}

// Label is the signal's name in metrics and logs: "latency_p99",
// "error_rate", "in_flight", "header:X-Origin-Cpu", "prometheus:NAME".
func (s Source) Label() string {
	switch s.Measure {
	case Latency:
		return "latency_p" + strconv.FormatFloat(s.Quantile*100, 'f', -1, 64)
	case Header:
		return "header:" + s.Header
	case Prometheus:
		return "prometheus:" + s.Metric
	}
	return s.Measure.String()
}
