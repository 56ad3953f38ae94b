package adaptive

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const exposition = `# HELP origin_cpu_percent CPU use.
# TYPE origin_cpu_percent gauge
origin_cpu_percent{core="all"} 73.5
origin_cpu_percent{core="0"} 99
# TYPE origin_requests_total counter
origin_requests_total 12345
# TYPE origin_latency summary
origin_latency{quantile="0.99"} 0.3
origin_latency_sum 10
origin_latency_count 20
`

func TestParseMetric(t *testing.T) {
	cases := []struct {
		metric string
		labels map[string]string
		want   float64
		err    error
	}{
		{"origin_cpu_percent", map[string]string{"core": "all"}, 73.5, nil},
		{"origin_cpu_percent", map[string]string{"core": "0"}, 99, nil},
		{"origin_cpu_percent", nil, 73.5, nil},
		{"origin_requests_total", nil, 12345, nil},
		{"origin_cpu_percent", map[string]string{"core": "7"}, 0, ErrNoSeries},
		{"origin_missing", nil, 0, ErrNoSeries},
		{"origin_latency", nil, 0, ErrGarbage},
	}
	for _, c := range cases {
		v, err := ParseMetric(strings.NewReader(exposition), c.metric, c.labels)
		if v != c.want || !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("%s%v: %v, %v; want %v, %v", c.metric, c.labels, v, err, c.want, c.err)
		}
	}
	for _, bad := range []string{"origin_cpu_percent{core=\"all\" 7\n", "origin_cpu_percent NaN\n", "origin_cpu_percent +Inf\n", "\x00\xff"} {
		if v, err := ParseMetric(strings.NewReader(bad), "origin_cpu_percent", nil); err == nil {
			t.Errorf("%q read as %v", bad, v)
		}
	}
}

func TestScraperFailures(t *testing.T) {
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write([]byte(exposition))
	}))
	defer good.Close()
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>origin_cpu_percent is {{high}}</html>"))
	}))
	defer garbage.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer failing.Close()
	proto := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited")
		w.Write([]byte("\xc1\xc1\xc1\xc1\xc1\xc100"))
	}))
	defer proto.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()

	cases := []struct {
		url    string
		reason string
	}{
		{good.URL, ""},
		{slow.URL, ReasonTimeout},
		{garbage.URL, ReasonGarbage},
		{failing.URL, ReasonDown},
		{proto.URL, ReasonGarbage},
		{down.URL, ReasonDown},
	}
	for _, c := range cases {
		s := &Scraper{URL: c.url, Metric: "origin_cpu_percent", Labels: map[string]string{"core": "all"}, Timeout: 100 * time.Millisecond}
		v, err := s.Read(context.Background())
		switch {
		case c.reason == "" && (err != nil || v != 73.5):
			t.Errorf("%s: %v, %v", c.url, v, err)
		case c.reason != "" && err == nil:
			t.Errorf("%s: read %v, want a failure", c.url, v)
		case c.reason != "" && failureReason(err) != c.reason:
			t.Errorf("%s: %v classified %s, want %s", c.url, err, failureReason(err), c.reason)
		}
	}
}
