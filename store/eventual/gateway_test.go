package eventual

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
)

// TestMultiNodeGateway runs three real gateway processes (cmd/tollgate
// serve, store: redis) sharing one redis-server, with a client spreading
// requests over them: the strict tier admits exactly the limit. (The
// gateway's configuration has no eventual tier yet; TestMultiNode measures
// that one with node processes of its own.)
func TestMultiNodeGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/tollgate and starts three gateways")
	}
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "tollgate")
	build := exec.Command("go", "build", "-o", bin, "./cmd/tollgate")
	build.Dir = strings.TrimSpace(string(root))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("cmd/tollgate does not build: %v\n%s", err, out)
	}
	srv := redistest.Start(t)
	cfg := filepath.Join(t.TempDir(), "gateway.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
listen:
  addr: "127.0.0.1:0"
admin:
  addr: "off"
routes:
  - path: /
    upstream: demo
store:
  redis:
    url: "redis://%s"
    timeout: 2s
on_error: closed
rules:
  - name: shared
    key: ip
    policies:
      - algorithm: token_bucket
        rate: 500/h
        burst: %d
`, srv.Addr, nodePolicy.Burst)), 0o644)

	var addrs []string
	for range 3 {
		addr := freeAddr(t)
		cmd := exec.Command(bin, "serve", "-config", cfg, "-listen", addr, "-log-level", "warn")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		addrs = append(addrs, addr)
	}
	for _, addr := range addrs { // started together, waited for in turn
		waitListening(t, addr)
	}
	got, r := load(t, addrs, 1500, 1500)
	t.Logf("3 gateways, strict: admitted %d of 1500 at %.0f req/s, limit %d", got, r, nodePolicy.Burst)
	if got != int(nodePolicy.Burst) {
		t.Fatalf("admitted %d, want exactly %d", got, nodePolicy.Burst)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", redistest.FreePort(t))
}

// waitListening polls a starting process's port (a real process, not a
// wait for virtual time).
func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		// A connection, not a request: a request would be counted.
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("gateway on %s did not start", addr)
}
