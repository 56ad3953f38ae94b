package config

import (
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/adaptive"
)

const adaptiveFile = `routes:
  - path: /
    upstream: http://127.0.0.1:9000
adaptive:
  origin:
    upstream: http://127.0.0.1:9000
    interval: 2s
    floor: 20%
    recovery: 10%
    hysteresis: 0%
    on_missing: tighten
    signals:
      - measure: latency
        quantile: p99.9
        threshold: 500ms
        weight: "0.4"
      - measure: error_rate
        threshold: 5%
      - measure: header
        header: X-Origin-Cpu
        threshold: "80"
        weight: "0.2"
      - measure: prometheus
        url: http://127.0.0.1:9000/metrics
        metric: origin_queue_depth
        labels: {pool: main}
        threshold: "50"
rules:
  - name: api
    policies:
      - rate: 100/s
        adaptive: origin
`

func TestAdaptiveSection(t *testing.T) {
	c, err := Parse("a.yaml", []byte(adaptiveFile))
	if err != nil {
		t.Fatal(err)
	}
	ss := c.AdaptiveSettings()
	if len(ss) != 1 {
		t.Fatalf("%d controllers", len(ss))
	}
	s := ss[0]
	if s.Name != "origin" || s.Interval != 2*time.Second || s.Floor != 200 || s.Recovery != 100 ||
		s.Decrease != 0.5 || !s.NoHysteresis || s.Hysteresis != 0 || s.OnMissing != adaptive.Tighten ||
		s.Upstream != "http://127.0.0.1:9000" || s.FleetTier != "" {
		t.Fatalf("settings %+v", s)
	}
	want := []adaptive.Signal{
		{Name: "latency_p99.9", Threshold: 0.5, Weight: 0.4},
		{Name: "error_rate", Threshold: 5, Weight: 1},
		{Name: "header:X-Origin-Cpu", Threshold: 80, Weight: 0.2},
		{Name: "prometheus:origin_queue_depth", Threshold: 50, Weight: 1},
	}
	for i, w := range want {
		g := s.Signals[i]
		if g.Name != w.Name || g.Threshold != w.Threshold || g.Weight != w.Weight {
			t.Errorf("signal %d = %+v, want %+v", i, g, w)
		}
	}
	if q := s.Signals[0].Source.Quantile; q < 0.9989 || q > 0.9991 {
		t.Errorf("quantile %v", q)
	}
	if l := s.Signals[3].Source.Labels["pool"]; l != "main" {
		t.Errorf("labels %v", s.Signals[3].Source.Labels)
	}
}

func TestAdaptiveProblemsHaveLines(t *testing.T) {
	src := `routes:
  - path: /
    upstream: http://127.0.0.1:9000
adaptive:
  origin:
    upstream: http://127.0.0.1:9001
    floor: "10"
    on_missing: panic
    fleet: redis
    signals:
      - measure: latency
        threshold: fast
      - measure: cpu
        threshold: "80"
      - measure: header
        threshold: "-1"
        weight: heavy
      - measure: prometheus
        url: ftp://x/metrics
        threshold: "3"
  empty: {}
rules:
  - name: api
    policies:
      - rate: 100/s
        adaptive: orign
`
	_, err := Parse("bad.yaml", []byte(src))
	checkProblems(t, err, []want{
		{6, `upstream: "http://127.0.0.1:9001" is the upstream of no route`},
		{7, `floor: "10": want a percentage`},
		{8, `on_missing: "panic": want hold or tighten`},
		{9, "redis needs store.redis"},
		{12, `threshold: "fast": want a positive duration`},
		{13, `measure: "cpu": want one of latency, error_rate, in_flight, header, prometheus`},
		{15, `header: "": want a header field name`},
		{16, `threshold: "-1": want a positive number`},
		{17, `weight: "heavy"`},
		{18, `metric: required`},
		{19, "url: want an http:// or https:// URL"},
		{21, "adaptive.empty.signals: no signals"},
		{26, `unknown adaptive controller "orign" (did you mean "origin"?)`},
	})
}

func TestAdaptiveGossipFleetNeedsStoreGossip(t *testing.T) {
	src := `routes:
  - path: /
    upstream: http://127.0.0.1:9000
adaptive:
  origin:
    upstream: http://127.0.0.1:9000
    fleet: gossip
    signals:
      - measure: latency
        threshold: 500ms
  other:
    upstream: http://127.0.0.1:9000
    fleet: carrier-pigeon
    signals:
      - measure: latency
        threshold: 500ms
`
	_, err := Parse("bad.yaml", []byte(src))
	checkProblems(t, err, []want{
		{7, "gossip needs store.gossip"},
		{13, `fleet: "carrier-pigeon": want redis, gossip, or nothing`},
	})
	good := "store:\n  gossip:\n    bind_addr: 127.0.0.1\n" + src[:strings.Index(src, "  other:")]
	c, err := Parse("good.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if s := c.AdaptiveSettings()[0]; s.FleetTier != adaptive.FleetGossip {
		t.Fatalf("fleet tier %q", s.FleetTier)
	}
}
