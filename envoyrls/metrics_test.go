package envoyrls

import (
	"context"
	"strconv"
	"testing"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
)

// counter is the value of name{domain, descriptor} in reg.
func counter(t *testing.T, reg *prometheus.Registry, name, domain, descriptor string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var d, k string
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case "domain":
					d = lp.GetValue()
				case "descriptor":
					k = lp.GetValue()
				}
			}
			if d == domain && k == descriptor {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// The counters split hits as envoyproxy/ratelimit does: a limit of 10
// with near ratio 0.8 (near from the 9th hit), hit 7, then 3 at once,
// then 2 more: within 10 (near 2), over 2.
func TestMetricsSplitHitsAsEnvoyproxyDoes(t *testing.T) {
	reg := prometheus.NewRegistry()
	svc := newBadInputService(t, reg)
	api := desc("path", "/api")
	send := func(hits uint32) {
		t.Helper()
		if _, err := svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "edge", HitsAddend: hits, Descriptors: []*rlv3.RateLimitDescriptor{api}}); err != nil {
			t.Fatal(err)
		}
	}
	for range 7 {
		send(1)
	}
	send(3)
	send(1)
	send(1)
	for name, want := range map[string]float64{
		"tollgate_rls_total_hits_total":   12,
		"tollgate_rls_within_limit_total": 10,
		"tollgate_rls_near_limit_total":   2,
		"tollgate_rls_over_limit_total":   2,
		"tollgate_rls_shadow_mode_total":  0,
	} {
		if got := counter(t, reg, name, "edge", "path_/api"); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// Detailed labels carry request values only up to the bound; past it
// they count under the configured path.
func TestDetailedMetricLabelsAreBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, 3)
	if err != nil {
		t.Fatal(err)
	}
	l := &Limit{Domain: "d", Path: "user", RequestsPerUnit: 100}
	for i := range 10 {
		m.count(l, "user_"+strconv.Itoa(i), 1, true, 99, 0.8)
	}
	for i := range 3 {
		if got := counter(t, reg, "tollgate_rls_total_hits_total", "d", "user_"+strconv.Itoa(i)); got != 1 {
			t.Errorf("user_%d: %v hits, want 1", i, got)
		}
	}
	if got := counter(t, reg, "tollgate_rls_total_hits_total", "d", "user"); got != 7 {
		t.Errorf("configured path: %v hits, want the 7 past the bound", got)
	}
}

// A limit override from a request for a domain not configured is not
// applied (a bare OK, as envoyproxy/ratelimit answers) and counts
// nothing: requests cannot create label values.
func TestOverrideLimitLabelsAreBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	svc := newBadInputService(t, reg)
	for i := range 5 {
		d := desc("k", "v")
		d.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: 2}
		resp, err := svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "made-up-" + strconv.Itoa(i), Descriptors: []*rlv3.RateLimitDescriptor{d, d}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetOverallCode() != rlsv3.RateLimitResponse_OK || resp.GetStatuses()[1].GetCurrentLimit() != nil {
			t.Fatalf("override in an unknown domain: %v", resp)
		}
	}
	if n := countersTouched(t, reg); n != 0 {
		t.Errorf("%d series, want 0", n)
	}
}
