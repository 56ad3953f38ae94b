package examples

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/gateway"
)

// TestExemptMonitoring runs exempt-monitoring.yaml with this test as its
// load balancer (127.0.0.1 added to the trusted proxies, so that the test
// can name client addresses in X-Forwarded-For): a client is limited to
// the burst of 20; the monitoring ranges (inline and from the file),
// the internal keys and the health checks never are, and carry no
// RateLimit fields.
func TestExemptMonitoring(t *testing.T) {
	cfg, err := config.Load("exempt-monitoring.yaml")
	if err != nil {
		t.Fatal(err)
	}
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(origin.Close)
	cfg.Listen.Addr, cfg.Admin.Addr = "127.0.0.1:0", "off"
	cfg.ClientIP.TrustedProxies = append(cfg.ClientIP.TrustedProxies, "127.0.0.1")
	cfg.Routes[0].Upstream = origin.URL
	g, err := gateway.New(cfg, gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	base := "http://" + g.Addr().String()

	// burst sends 25 requests (more than the burst of 20) and returns how
	// many were refused and whether any carried RateLimit fields.
	burst := func(path string, hdr ...string) (refused int, fields bool) {
		for range 25 {
			resp, _ := do(t, "GET", base+path, hdr...)
			if resp.StatusCode == 429 {
				refused++
			}
			fields = fields || resp.Header.Get("Ratelimit-Policy") != "" || resp.Header.Get("Ratelimit") != ""
		}
		return refused, fields
	}
	if refused, fields := burst("/api/x", "X-Forwarded-For", "192.0.2.200, 10.0.0.1"); refused != 0 || fields {
		t.Errorf("inline monitoring range: %d refused, fields %v", refused, fields)
	}
	if refused, fields := burst("/api/x", "X-Forwarded-For", "198.51.100.4"); refused != 0 || fields {
		t.Errorf("monitoring range from the file: %d refused, fields %v", refused, fields)
	}
	if refused, fields := burst("/api/x", "X-Forwarded-For", "2001:db8:9::1"); refused != 0 || fields {
		t.Errorf("IPv6 monitoring range from the file: %d refused, fields %v", refused, fields)
	}
	if refused, fields := burst("/api/x", "X-Forwarded-For", "203.0.113.50", "X-API-Key", "k-internal-batch-7f3a"); refused != 0 || fields {
		t.Errorf("internal key: %d refused, fields %v", refused, fields)
	}
	refused, fields := burst("/api/x", "X-Forwarded-For", "203.0.113.50")
	if refused < 5 || !fields {
		t.Errorf("a client: %d refused, fields %v; want at least 5 refused of 25", refused, fields)
	}
	// The same client, now over its limit: health checks pass.
	if refused, fields := burst("/healthz", "X-Forwarded-For", "203.0.113.50"); refused != 0 || fields {
		t.Errorf("/healthz: %d refused, fields %v", refused, fields)
	}
	// A customer key is no internal one.
	if refused, _ := burst("/api/x", "X-Forwarded-For", "203.0.113.51", "X-API-Key", "k-customer"); refused < 5 {
		t.Errorf("customer key: %d refused", refused)
	}
}
