package config

import (
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/adaptive"
)

func TestAdaptiveConcurrencySection(t *testing.T) {
	c, err := Parse("g.yaml", []byte(`routes:
  - path: /
    upstream: http://127.0.0.1:9000
    adaptive_concurrency:
      min_concurrency: 2
      max_concurrency: 64
      buffer: 50%
      quantile: p50
      sample_window: 250ms
      min_rtt_interval: 10s
      min_rtt_requests: 20
      jitter: 0%
      max_delay: 20ms
  - path: /other
    upstream: http://127.0.0.1:9000
    adaptive_concurrency: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := c.Routes[0].AdaptiveConcurrency.GradientSettings()
	want := adaptive.GradientSettings{
		MinLimit: 2, MaxLimit: 64, Buffer: 0.5, Quantile: 0.5,
		SampleWindow: 250 * time.Millisecond, MinRTTInterval: 10 * time.Second,
		MinRTTRequests: 20, Jitter: -1,
	}
	if got != want {
		t.Fatalf("settings %+v, want %+v", got, want)
	}
	if d := c.Routes[0].AdaptiveConcurrency.MaxDelay; d != 20*time.Millisecond {
		t.Fatalf("max_delay %v", d)
	}
	def := c.Routes[1].AdaptiveConcurrency.GradientSettings()
	want = adaptive.GradientSettings{
		MinLimit: 3, MaxLimit: 1000, Buffer: 0.25, Quantile: 0.9,
		SampleWindow: 100 * time.Millisecond, MinRTTInterval: 30 * time.Second,
		MinRTTRequests: 50, Jitter: 0.1,
	}
	if def != want {
		t.Fatalf("defaults %+v, want %+v", def, want)
	}
}

func TestAdaptiveConcurrencyProblemsHaveLines(t *testing.T) {
	src := `routes:
  - path: /
    upstream: http://127.0.0.1:9000
    adaptive_concurrency:
      min_concurrency: 10
      max_concurrency: 5
      buffer: "25"
      quantile: 90
      sample_window: 1ms
      min_rtt_interval: 100ms
      min_rtt_requests: -3
      jitter: 200%
      max_delay: -1s
  - path: /demo
    upstream: demo
    adaptive_concurrency: {}
`
	_, err := Parse("bad.yaml", []byte(src))
	checkProblems(t, err, []want{
		{6, "max_concurrency: 5 is below min_concurrency 10"},
		{7, `buffer: "25": want a percentage`},
		{8, `quantile: "90": want p50, p90`},
		{9, "sample_window: 1ms is below the least value of 10ms"},
		{10, "min_rtt_interval: 100ms is below the least value of 1s"},
		{11, "min_rtt_requests: -3: want 1 to 10000"},
		{12, `jitter: "200%": want a percentage from 0% to 100%`},
		{13, `max_delay: "-1s" is not a duration`},
		{16, "adaptive_concurrency: not for the demo upstream"},
	})
}
