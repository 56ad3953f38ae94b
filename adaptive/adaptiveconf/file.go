package adaptiveconf

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// MinInterval is the shortest Controller.Interval: a tiny one would spin
// a core.
const MinInterval = 10 * time.Millisecond

// Controller is one adaptive controller of a configuration file
// (adaptive.NAME), as it is written: every interval it reads its
// signals, computes a weighted breach score, and moves a factor between
// its floor and 100% (the policy as written), which scales every policy
// that names it (a policy's adaptive key). Package adaptive's
// documentation gives the formula.
type Controller struct {
	// Upstream is the upstream URL, written as in a route, whose
	// exchanges the gateway measures for the latency, error_rate,
	// in_flight and header signals (every route to it counts, on both
	// data paths). Only what the upstream answered, or a failure to reach
	// it or to get its answer within upstream.response_timeout, is
	// measured: an answer the gateway makes itself (400 for a broken
	// request body, 408, 413, 431, 429, its own 503) and a client gone
	// before the answer never are. Required when one of those signals is
	// used.
	Upstream string `yaml:"upstream"`
	// Interval is the time between two steps of the controller. Default
	// 1s; at least 10ms.
	Interval time.Duration `yaml:"interval"`
	// Floor is the lowest factor, a percentage of the policy as written
	// ("10%"). Default 10%.
	Floor string `yaml:"floor"`
	// Decrease is the cut at a full breach (score 1), a percentage: the
	// factor is multiplied by 1 - decrease × score. Default 50%.
	Decrease string `yaml:"decrease"`
	// Recovery is what is added to the factor per healthy interval, a
	// percentage of the policy as written. Default 5%.
	Recovery string `yaml:"recovery"`
	// Hysteresis is how far below its threshold, as a percentage of it,
	// every signal must be for an interval to count as healthy; between
	// that and the threshold the factor holds. Default 10%; "0%" for
	// none.
	Hysteresis string `yaml:"hysteresis"`
	// RecoverAfter is how many healthy intervals in a row come before
	// the factor recovers. Default 1.
	RecoverAfter int `yaml:"recover_after"`
	// OnMissing is what a signal whose source failed (down, slow,
	// garbage) does to the factor: "hold" (the default: it neither cuts
	// nor lets the factor recover) or "tighten" (it counts as a full
	// breach). Failures are counted in
	// tollgate_adaptive_signal_failures_total either way.
	OnMissing string `yaml:"on_missing"`
	// Fleet is "redis" to make the gateways sharing store.redis apply
	// one factor, the lowest any of them computed in the last three
	// intervals (each node's is published every interval and read every
	// interval/4, at most 250ms); "gossip" to do the same through the
	// store.gossip fleet (each node's factor is sent to every member at
	// once, over memberlist). Default "": each gateway alone.
	Fleet string `yaml:"fleet"`
	// Signals are what the controller watches; at least one.
	Signals []SignalConfig `yaml:"signals"`
}

// SignalConfig is one health signal of an adaptive controller, as it
// is written.
type SignalConfig struct {
	// Measure is latency (a quantile of the upstream's response time),
	// error_rate (the percentage of the upstream's exchanges it answered
	// 5xx or not at all), in_flight (requests being proxied to the upstream), header
	// (a number the upstream sends in a response header) or prometheus
	// (a metric of the origin's Prometheus endpoint). Required.
	Measure string `yaml:"measure"`
	// Quantile is latency's quantile: "p99", "p99.9", "p50". Default p99.
	Quantile string `yaml:"quantile"`
	// Header is header's field name, e.g. X-Origin-Cpu.
	Header string `yaml:"header"`
	// URL is prometheus's endpoint, e.g. http://10.0.0.5:9100/metrics.
	URL string `yaml:"url"`
	// Metric is prometheus's metric family name (a gauge, counter or
	// untyped value).
	Metric string `yaml:"metric"`
	// Labels select prometheus's series: every label given must match.
	Labels map[string]string `yaml:"labels"`
	// Timeout bounds one scrape of URL. Default half the interval.
	Timeout time.Duration `yaml:"timeout"`
	// Threshold is the value above which the signal breaches: a
	// duration for latency ("500ms"), a percentage for error_rate
	// ("5%"), a number for the others ("80", "80%" alike). Required.
	Threshold string `yaml:"threshold"`
	// Weight is the signal's share of the breach score, a positive
	// number ("0.4"). Default 1.
	Weight string `yaml:"weight"`
}

// Env is what a controller's checks need to know of the rest of the
// file.
type Env struct {
	// Redis and Gossip say whether store.redis and store.gossip are
	// given (fleet: redis and gossip need them).
	Redis, Gossip bool
	// RoutesTo reports whether a route sends requests to an upstream.
	RoutesTo func(upstream string) bool
}

// Settings converts a, the controller name of the file, at path at
// ("adaptive.NAME"); bad, when not nil, is told of each problem, at its
// key's path, and the second result is false when there was one.
func (a *Controller) Settings(name, at string, env Env, bad func(path, format string, args ...any)) (Settings, bool) {
	good := true
	report := bad
	bad = func(path, format string, args ...any) {
		good = false
		if report != nil {
			report(path, format, args...)
		}
	}
	s := Settings{
		Name: name, Interval: a.Interval, RecoverAfter: a.RecoverAfter,
		Upstream: a.Upstream, FleetTier: a.Fleet,
	}
	if a.Interval > 0 && a.Interval < MinInterval {
		bad(at+".interval", "%v is below the least value of %v", a.Interval, MinInterval)
	}
	pct := func(key, v string, least, most float64) float64 {
		if v == "" {
			return 0
		}
		f, err := parsePercent(v)
		if err != nil || f < least || f > most {
			bad(at+"."+key, "%q: want a percentage from %v%% to %v%%, e.g. \"10%%\"", v, least*100, most*100)
			return 0
		}
		return f
	}
	if f := pct("floor", a.Floor, 0.001, 1); f > 0 {
		s.Floor = int64(math.Round(f * 1000))
	}
	s.Decrease = pct("decrease", a.Decrease, 0.001, 1)
	if f := pct("recovery", a.Recovery, 0.001, 1); f > 0 {
		s.Recovery = int64(math.Round(f * 1000))
	}
	switch h := strings.TrimSpace(a.Hysteresis); {
	case h == "":
	case strings.TrimSuffix(h, "%") == "0":
		s.NoHysteresis = true
	default:
		s.Hysteresis = pct("hysteresis", a.Hysteresis, 0.001, 0.99)
	}
	if a.RecoverAfter < 0 {
		bad(at+".recover_after", "%d must not be negative", a.RecoverAfter)
	}
	switch a.OnMissing {
	case "", "hold":
	case "tighten":
		s.OnMissing = Tighten
	default:
		bad(at+".on_missing", "%q: want hold or tighten", a.OnMissing)
	}
	switch a.Fleet {
	case "":
	case FleetRedis:
		if !env.Redis {
			bad(at+".fleet", "redis needs store.redis (the store is in memory)")
		}
	case FleetGossip:
		if !env.Gossip {
			bad(at+".fleet", "gossip needs store.gossip (no gossip fleet is configured)")
		}
	default:
		bad(at+".fleet", "%q: want redis, gossip, or nothing for this gateway alone", a.Fleet)
	}
	if len(a.Signals) == 0 {
		bad(at+".signals", "no signals: the controller would never move")
	}
	measured := false
	for i, sg := range a.Signals {
		sig, ok := signal(fmt.Sprintf("%s.signals[%d]", at, i), sg, bad)
		good = good && ok
		s.Signals = append(s.Signals, sig)
		switch sig.Source.Measure {
		case Latency, ErrorRate, InFlight, Header:
			measured = true
		}
	}
	if measured {
		switch {
		case a.Upstream == "":
			bad(at+".upstream", "required: the latency, error_rate, in_flight and header signals are measured on the exchanges with it")
		case env.RoutesTo == nil || !env.RoutesTo(a.Upstream):
			bad(at+".upstream", "%q is the upstream of no route", a.Upstream)
		}
	}
	s.Defaults()
	if good {
		if err := s.Validate(); err != nil {
			bad(at, "%v", err)
		}
	}
	return s, good
}

func signal(at string, sg SignalConfig, bad func(string, string, ...any)) (Signal, bool) {
	ok := true
	fail := func(path, format string, args ...any) {
		ok = false
		bad(path, format, args...)
	}
	out := Signal{Weight: 1}
	m, known := ParseMeasure(sg.Measure)
	if !known {
		fail(at+".measure", "%q: want one of %s", sg.Measure, strings.Join(MeasureNames(), ", "))
	}
	out.Source = Source{Measure: m, Header: sg.Header, URL: sg.URL, Metric: sg.Metric, Labels: sg.Labels, Timeout: sg.Timeout}
	only := func(key, v string, want Measure) {
		if v != "" && m != want && known {
			fail(at+"."+key, "only a %s signal takes %s", want, key)
		}
	}
	only("quantile", sg.Quantile, Latency)
	only("header", sg.Header, Header)
	only("url", sg.URL, Prometheus)
	only("metric", sg.Metric, Prometheus)
	if len(sg.Labels) > 0 && m != Prometheus && known {
		fail(at+".labels", "only a prometheus signal takes labels")
	}
	if sg.Timeout != 0 && m != Prometheus && known {
		fail(at+".timeout", "only a prometheus signal takes timeout")
	}
	switch m {
	case Latency:
		out.Source.Quantile = 0.99
		if sg.Quantile != "" {
			q, err := strconv.ParseFloat(strings.TrimPrefix(sg.Quantile, "p"), 64)
			if err != nil || !strings.HasPrefix(sg.Quantile, "p") || !(q > 0 && q < 100) {
				fail(at+".quantile", "%q: want p50, p90, p99, p99.9, ...", sg.Quantile)
			} else {
				out.Source.Quantile = q / 100
			}
		}
	case Header:
		if sg.Header == "" || strings.ContainsAny(sg.Header, " \t\r\n:") {
			fail(at+".header", "%q: want a header field name, e.g. X-Origin-Cpu", sg.Header)
		}
	case Prometheus:
		if u, err := url.Parse(sg.URL); sg.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			fail(at+".url", "want an http:// or https:// URL without credentials, e.g. http://HOST:PORT/metrics")
		}
		if sg.Metric == "" {
			fail(at+".metric", "required: the metric family to read")
		}
		if sg.Timeout < 0 || sg.Timeout > 0 && sg.Timeout < time.Millisecond {
			fail(at+".timeout", "%v: want at least 1ms", sg.Timeout)
		}
	}
	th := strings.TrimSpace(sg.Threshold)
	switch {
	case th == "":
		fail(at+".threshold", "required: the value above which the signal breaches")
	case m == Latency:
		d, err := time.ParseDuration(th)
		if err != nil || d <= 0 {
			fail(at+".threshold", "%q: want a positive duration such as 500ms", sg.Threshold)
		}
		out.Threshold = d.Seconds()
	default:
		v, err := strconv.ParseFloat(strings.TrimSuffix(th, "%"), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			fail(at+".threshold", "%q: want a positive number (a trailing %% is allowed)", sg.Threshold)
		}
		out.Threshold = v
	}
	if sg.Weight != "" {
		w, err := strconv.ParseFloat(strings.TrimSpace(sg.Weight), 64)
		if err != nil || !(w > 0) || math.IsInf(w, 0) {
			fail(at+".weight", "%q: want a positive number such as 0.4", sg.Weight)
		}
		out.Weight = w
	}
	out.Name = out.Source.Label()
	return out, ok
}

// parsePercent reads "10%" (or "12.5%") as a fraction, 0.1.
func parsePercent(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if !strings.HasSuffix(s, "%") {
		return 0, fmt.Errorf("no %% sign")
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "%")), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("not a number")
	}
	return v / 100, nil
}
