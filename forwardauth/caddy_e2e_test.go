package forwardauth

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// startCaddy runs caddy in the foreground with the Caddyfile conf, its
// data and configuration directories under a temporary home.
func startCaddy(t *testing.T, conf, addr string) (stop func()) {
	t.Helper()
	bin, err := exec.LookPath("caddy")
	if err != nil {
		t.Skip("caddy is not installed: install it (Debian: apt-get install caddy; scripts/test.sh does) to run the Caddy end-to-end test")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--adapter", "caddyfile", "--config", path)
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	return startProcess(t, cmd, addr)
}

func TestCaddySnippetAnswersAllowedThen429AndFailsClosedWhenTollgateIsDown(t *testing.T) {
	origin := e2eOrigin(t)
	tg, asked := e2eTollgate(t)
	addr := freeAddr(t)
	conf := renderSnippet(t, "Caddyfile", map[string]string{
		snippetProxy: addr, snippetTollgate: tg.Listener.Addr().String(), snippetOrigin: origin.Listener.Addr().String(),
	})
	stop := startCaddy(t, conf, addr)
	base := "http://" + addr

	h := allowedThen429(t, base)
	if h.Get("Retry-After") == "" || h.Get("RateLimit") == "" || h.Get("Cache-Control") != "no-store" {
		t.Errorf("429 fields: %v", h)
	}
	if resp, body := get(t, base+"/public"); resp.StatusCode != 200 || body != "origin ok" || resp.Header.Get("RateLimit") != "" {
		t.Errorf("/public: %d %q %v", resp.StatusCode, body, resp.Header)
	}

	// tollgate down: Caddy answers 502 (fail closed).
	tg.Close()
	if resp, body := get(t, base+"/api/items"); resp.StatusCode != http.StatusBadGateway || body == "origin ok" {
		t.Errorf("tollgate down: %d %q, want Caddy's 502", resp.StatusCode, body)
	}

	// Caddy down: nothing reaches tollgate.
	stop()
	before := asked.Load()
	c := &http.Client{Timeout: 5 * time.Second}
	if resp, err := c.Get(base + "/api/items"); err == nil {
		resp.Body.Close()
		t.Errorf("caddy down: got %d, want a connection error", resp.StatusCode)
	}
	if asked.Load() != before {
		t.Errorf("caddy down: tollgate was asked")
	}
}

// Paths the client spells with dot segments, repeated slashes or
// encoded dots and slashes count against the /api/ rule as /api/x does.
func TestCaddySnippetLimitsUncleanPaths(t *testing.T) {
	origin, seen := pathOrigin(t)
	tg, _ := e2eTollgate(t)
	addr := freeAddr(t)
	conf := renderSnippet(t, "Caddyfile", map[string]string{
		snippetProxy: addr, snippetTollgate: tg.Listener.Addr().String(), snippetOrigin: origin.Listener.Addr().String(),
	})
	startCaddy(t, conf, addr)
	uncleanPathsAreLimited(t, addr)
	t.Logf("the origin got %q", seen())
}
