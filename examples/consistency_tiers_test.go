package examples

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/gateway"
	"github.com/tollgate-dev/tollgate/internal/redistest"
)

// TestConsistencyTiers serves consistency-tiers.yaml over a real Redis: the
// strict login rule counts in Redis, the local burst guard announces its
// node's share (600 / 3) and never touches Redis.
func TestConsistencyTiers(t *testing.T) {
	rs := redistest.Start(t)
	cfg, err := config.Load("consistency-tiers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "origin")
	}))
	t.Cleanup(origin.Close)
	cfg.Listen.Addr, cfg.Admin.Addr = "127.0.0.1:0", "off"
	cfg.Store.Redis.URL = "redis://" + rs.Addr
	for i := range cfg.Routes {
		cfg.Routes[i].Upstream = origin.URL
	}
	g, err := gateway.New(cfg, gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	base := "http://" + g.Addr().String()

	resp, _ := do(t, "GET", base+"/items")
	if p := resp.Header.Get("Ratelimit-Policy"); !strings.Contains(p, `"burst-guard";q=200`) {
		t.Errorf("RateLimit-Policy = %q, want the burst guard's share of 200", p)
	}
	for i := range 5 {
		if resp, _ := do(t, "POST", base+"/login"); resp.StatusCode != 200 {
			t.Fatalf("login %d: %d", i+1, resp.StatusCode)
		}
	}
	if resp, _ := do(t, "POST", base+"/login"); resp.StatusCode != 429 {
		t.Fatalf("6th login: %d", resp.StatusCode)
	}
	keys := rs.CLI(t, "--scan", "--pattern", "tollgate:*")
	if !strings.Contains(keys, "login-exact") || strings.Contains(keys, "burst-guard") {
		t.Fatalf("Redis keys %q: want login-exact's, not burst-guard's", keys)
	}
}
