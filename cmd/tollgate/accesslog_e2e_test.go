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
// replay with no format flag: replay recognises the format, reads every
// line (quotes and escapes in the fields included), and replaying it
// against the same configuration refuses what the gateway refused.
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
			for i := range 5 {
				if resp, _ := get(t, p.url(fmt.Sprintf("/items/%d?q=a%%22b", i)), "User-Agent", `odd "agent" \ é`, "Referer", `http://x/"y"`); resp.StatusCode == 429 {
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
			if code := run([]string{"replay", "-config", p.file, "-json", "-", "-progress", "never", logFile}, &stdout, &stderr); code != exitOK {
				t.Fatalf("replay exit %d: %s", code, stderr.String())
			}
			var rep struct {
				Input struct {
					Format    string `json:"format"`
					Malformed int64  `json:"malformed"`
					Simulated int64  `json:"simulated"`
				} `json:"input"`
				Policies []struct {
					Refused int64 `json:"refused"`
				} `json:"policies"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
				t.Fatalf("%v\n%s", err, stdout.String())
			}
			if in := rep.Input; in.Format != format || in.Malformed != 0 || in.Simulated != 5 {
				t.Fatalf("replay read the gateway's %s log as %+v, want format %s, 5 simulated, none malformed", format, in, format)
			}
			if len(rep.Policies) != 1 || rep.Policies[0].Refused != 2 {
				t.Fatalf("replay of the gateway's own log: %+v, want 2 refused", rep.Policies)
			}
		})
	}
}
