package gateway

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/tollgate-dev/tollgate/internal/frontendtest"
)

// A delayed request whose client goes away during its delay is logged
// 499 with 0 bytes (nginx's "client closed request"), not the 503 the
// gateway writes to the connection no one reads, on both data paths
// (fasthttp's HTTP/1.1, net/http's h2c); and a counting rule that counts
// 4xx and 5xx is not charged for it: the next failure the origin answers
// is its first (500, charged), the one after refused (429).
func TestDelayedClientGoneIsLogged499(t *testing.T) {
	origin := h1Upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.Write([]byte("ok")) //nolint:errcheck // a test origin
	}))
	for _, c := range []struct{ name, http2 string }{{"HTTP/1.1", "off"}, {"h2c", "on"}} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "access.log")
			g := newTestGateway(t, `listen: {addr: "127.0.0.1:0", http2: `+c.http2+`}
admin: {addr: off}
reload: {watch: false}
access_log: {path: "`+file+`", format: json}
routes: [{path: /, upstream: "`+origin+`"}]
rules:
  - name: shape
    match: {paths: [/slow]}
    policies: [{algorithm: leaky_bucket, rate: 1/s, burst: 5, mode: shape}]
  - name: failures
    count: {statuses: ["4xx", "5xx"]}
    policies: [{algorithm: token_bucket, rate: 1/h, burst: 1}]
`)
			if err := g.Start(); err != nil {
				t.Fatal(err)
			}
			base := "http://" + g.Addr().String()
			client := &http.Client{}
			if c.http2 == "on" {
				client = h2cClient()
			}
			do := func(ctx context.Context, path string) (int, error) {
				req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
				resp, err := client.Do(req)
				if err != nil {
					return 0, err
				}
				resp.Body.Close()
				return resp.StatusCode, nil
			}
			decided := func() uint64 {
				var m dto.Metric
				g.core.M.DecisionTime.Write(&m) //nolint:errcheck // a histogram's Write does not fail
				return m.GetHistogram().GetSampleCount()
			}
			cancelled := func() float64 {
				var m dto.Metric
				g.core.M.DelaysCancelled.Write(&m) //nolint:errcheck // a counter's Write does not fail
				return m.GetCounter().GetValue()
			}
			if code, err := do(context.Background(), "/slow"); code != 200 {
				t.Fatalf("the first /slow: %d %v, want 200 at once", code, err)
			}
			// The second waits a second; its client leaves once the
			// gateway has decided it (so it surely has the request).
			if c.http2 == "on" {
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { _, err := do(ctx, "/slow"); done <- err }()
				frontendtest.Until(t, func() bool { return decided() >= 2 })
				cancel()
				if err := <-done; err == nil {
					t.Fatal("the request whose client left was answered")
				}
			} else {
				conn, err := net.Dial("tcp", g.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := conn.Write([]byte("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
					t.Fatal(err)
				}
				frontendtest.Until(t, func() bool { return decided() >= 2 })
				conn.Close()
			}
			frontendtest.Until(t, func() bool { return cancelled() == 1 })
			if code, err := do(context.Background(), "/fail"); code != 500 {
				t.Fatalf("the first failure after the delay its client left: %d %v, want 500 (the delay not charged)", code, err)
			}
			if code, err := do(context.Background(), "/fail"); code != 429 {
				t.Fatalf("the second failure: %d %v, want 429 (the first charged)", code, err)
			}
			g.Close()
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			type line struct {
				URI      string `json:"uri"`
				Status   int    `json:"status"`
				Bytes    int    `json:"bytes"`
				Rule     string `json:"rule"`
				Decision string `json:"decision"`
			}
			var got []line
			for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				var e line
				if err := json.Unmarshal([]byte(l), &e); err != nil {
					t.Fatalf("%q: %v", l, err)
				}
				got = append(got, e)
			}
			want := []line{
				{"/slow", 200, 2, "failures", "allowed"}, // the rule: the last that matched
				{"/slow", 499, 0, "failures", "delayed"},
				{"/fail", 500, 0, "failures", "allowed"},
				{"/fail", 429, -1, "failures", "refused"},
			}
			if len(got) != len(want) {
				t.Fatalf("access log:\n%s", data)
			}
			for i, w := range want {
				g := got[i]
				if w.Bytes < 0 {
					g.Bytes = -1 // the refusal's body: any size
				}
				if g.URI != w.URI || g.Status != w.Status || g.Bytes != w.Bytes || g.Decision != w.Decision || g.Rule != w.Rule {
					t.Errorf("line %d = %+v, want %+v\n%s", i, got[i], w, data)
				}
			}
		})
	}
}
