package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The gateway's access log, in either format, is read back by tollgate
// replay: replaying it against the same configuration refuses what the
// gateway refused.
func TestE2EAccessLogReplaysItself(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"json", "combined"} {
		t.Run(format, func(t *testing.T) {
			srv, _ := origin(t)
			logFile := filepath.Join(t.TempDir(), "access.log")
			p := startServe(t, fmt.Sprintf(`listen: {addr: "127.0.0.1:0"}
admin: {addr: "127.0.0.1:0"}
reload: {watch: false}
routes: [{path: /, upstream: %q}]
access_log: {path: %q, format: %s}
rules:
  - name: per-ip
    policies: [{algorithm: fixed_window, limit: 3, window: 1h}]
`, srv.URL, logFile, format))
			refused := 0
			for range 5 {
				if resp, _ := get(t, p.url("/items")); resp.StatusCode == 429 {
					refused++
				}
			}
			p.signal(syscall.SIGTERM)
			if code := p.wait(10 * time.Second); code != 0 {
				t.Fatalf("exit %d", code)
			}
			if refused != 2 {
				t.Fatalf("gateway refused %d of 5, want 2", refused)
			}
			var stdout, stderr bytes.Buffer
			if code := run([]string{"replay", "-config", p.file, "-format", format, "-json", "-", "-progress", "never", logFile}, &stdout, &stderr); code != exitOK {
				t.Fatalf("replay exit %d: %s", code, stderr.String())
			}
			var rep struct {
				Policies []struct {
					Refused int64 `json:"refused"`
				} `json:"policies"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
				t.Fatalf("%v\n%s", err, stdout.String())
			}
			if len(rep.Policies) != 1 || rep.Policies[0].Refused != 2 {
				t.Fatalf("replay of the gateway's own log: %+v, want 2 refused", rep.Policies)
			}
		})
	}
}
