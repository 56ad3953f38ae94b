package examples

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/envoyrls"
	"github.com/tollgate-dev/tollgate/gateway"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// Every example loads, validates and compiles.
func TestExamplesAreValid(t *testing.T) {
	// gossip-fleet.yaml reads its secret key from the environment.
	t.Setenv("TOLLGATE_GOSSIP_KEY", testGossipKey)
	files, _ := filepath.Glob("*.yaml")
	if len(files) < 4 {
		t.Fatalf("found %d examples, want at least 4", len(files))
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			cfg, err := config.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			st, err := memory.New(memory.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			rc, err := cfg.EngineConfig() // with what the file names: members and list files, geoip databases
			if err != nil {
				t.Fatal(err)
			}
			rc.Scales = cfg.BaseScales()
			rc.Slots = memory.NewSlots()
			if _, err := rules.New(rc, st); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// serveExample runs an example in-process against a test origin, on a
// loopback port, without the admin listener, its access log (if any)
// written to the file accessLog returns.
func serveExample(t *testing.T, file string) string {
	base, _ := serveExampleLogged(t, file)
	return base
}

func serveExampleLogged(t *testing.T, file string) (base string, accessLog func() string) {
	t.Helper()
	return serveExampleWith(t, file, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "origin")
	}))
}

// serveExampleWith is serveExampleLogged with origin as every route's
// upstream.
func serveExampleWith(t *testing.T, file string, originHandler http.Handler) (base string, accessLog func() string) {
	t.Helper()
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "access.log")
	if cfg.AccessLog.Path != "" {
		cfg.AccessLog.Path = logFile
	}
	origin := httptest.NewServer(originHandler)
	t.Cleanup(origin.Close)
	cfg.Listen.Addr = "127.0.0.1:0"
	cfg.Admin.Addr = "off"
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
	return "http://" + g.Addr().String(), func() string {
		g.Close() // flushes the log
		b, _ := os.ReadFile(logFile)
		return string(b)
	}
}

func do(t *testing.T, method, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func TestAPIKeyTiers(t *testing.T) {
	base, accessLog := serveExampleLogged(t, "api-key-tiers.yaml")
	defer func() {
		// The access log keeps the query but not its keys' values.
		if l := accessLog(); !strings.Contains(l, `"GET /search?q=x&api_key=REDACTED HTTP/1.1" 200`) || strings.Contains(l, "k-0c1d2e3f40") {
			t.Errorf("access log:\n%s", l)
		}
	}()
	resp, _ := do(t, "GET", base+"/items", "X-API-Key", "k-3f9a1c0d2e")
	if p := resp.Header.Get("Ratelimit-Policy"); !strings.Contains(p, "q=200") {
		t.Errorf("pro key: RateLimit-Policy = %q, want the pro plan's burst 200", p)
	}
	resp, _ = do(t, "GET", base+"/items", "X-API-Key", "someone-unknown")
	if p := resp.Header.Get("Ratelimit-Policy"); !strings.Contains(p, "q=20;") {
		t.Errorf("unknown key: RateLimit-Policy = %q, want the free plan", p)
	}
	resp, _ = do(t, "GET", base+"/search?q=x&api_key=k-0c1d2e3f40", "X-API-Key", "k-0c1d2e3f40")
	if r := resp.Header.Get("X-Ratelimit-Remaining"); r != "15" {
		t.Errorf("search on free: X-RateLimit-Remaining = %q, want 15 (cost 5 of 20)", r)
	}
}

func TestPerIPAPI(t *testing.T) {
	base := serveExample(t, "per-ip-api.yaml")
	resp, _ := do(t, "GET", base+"/api/v1/things")
	if p := resp.Header.Get("Ratelimit-Policy"); !strings.Contains(p, `"per-second";q=200`) || !strings.Contains(p, `"all-clients";q=5000`) {
		t.Errorf("RateLimit-Policy = %q", resp.Header.Get("Ratelimit-Policy"))
	}
	resp, _ = do(t, "GET", base+"/static/app.js")
	if resp.Header.Get("Ratelimit-Policy") != "" {
		t.Errorf("a path outside /api/ was limited")
	}
}

func TestWriteShaping(t *testing.T) {
	base := serveExample(t, "write-shaping.yaml")
	for range 3 {
		if resp, _ := do(t, "GET", base+"/v1/things"); resp.StatusCode != 200 || resp.Header.Get("Ratelimit") != "" {
			t.Fatalf("reads must pass unlimited: %d %v", resp.StatusCode, resp.Header)
		}
	}
	resp, _ := do(t, "POST", base+"/v1/things")
	if resp.StatusCode != 200 || resp.Header.Get("Ratelimit") == "" {
		t.Fatalf("write: %d, headers %v", resp.StatusCode, resp.Header)
	}
}

// TestEnvoyRLSExampleLoads: the README's envoy-rls example directory is a
// valid envoyproxy/ratelimit configuration, with its extension key.
func TestEnvoyRLSExampleLoads(t *testing.T) {
	if _, err := envoyrls.LoadDir("envoy-rls"); err != nil {
		t.Fatal(err)
	}
}

// TestPerKeyConcurrency: per-key-concurrency.yaml lets an API key hold
// two reports in flight; the third is refused at once with 429 and the
// file's Retry-After of 5 s, while another key still gets through, and
// the key's slots come back once its reports are answered.
func TestPerKeyConcurrency(t *testing.T) {
	arrived := make(chan struct{}, 8)
	release := make(chan struct{})
	base, _ := serveExampleWith(t, "per-key-concurrency.yaml", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/reports/") {
			arrived <- struct{}{}
			<-release
		}
		io.WriteString(w, "origin")
	}))
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	type answer struct {
		status int
		err    error
	}
	answers := make(chan answer, 3)
	get := func(key string) {
		req, _ := http.NewRequest("GET", base+"/reports/monthly", nil)
		req.Header.Set("X-API-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answers <- answer{0, err}
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		answers <- answer{resp.StatusCode, nil}
	}
	held := func(who string) {
		t.Helper()
		select {
		case <-arrived: // held at the origin
		case a := <-answers:
			t.Fatalf("%s answered before reaching the origin: %d %v", who, a.status, a.err)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s never reached the origin", who)
		}
	}
	for range 2 {
		go get("k-alice")
		held("a report of k-alice")
	}
	// The third is answered at once: a request let through would be held
	// at the origin, and this client gives up after 10 s.
	req, _ := http.NewRequest("GET", base+"/reports/monthly", nil)
	req.Header.Set("X-API-Key", "k-alice")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("third report of one key, not refused at once: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "5" {
		t.Fatalf("third report of one key: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	go get("k-bob")
	held("another key's report")
	close(release)
	released = true
	for range 3 {
		if a := <-answers; a.err != nil || a.status != 200 {
			t.Fatalf("a held report: %d %v", a.status, a.err)
		}
	}
	// Both slots are given back when the responses end; the release
	// follows the last byte written, so allow it a moment.
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, _ := do(t, "GET", base+"/reports/daily", "X-API-Key", "k-alice")
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the key's slots never came back: %d", resp.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
