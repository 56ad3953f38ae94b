package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/tollgate-dev/tollgate/internal/frontendtest"
)

// A delayed request whose client goes away during its delay is logged
// 499 with 0 bytes (nginx's "client closed request"), not the 503 the
// gateway writes to the connection no one reads, on both data paths
// (fasthttp's HTTP/1.1; net/http's h2c, and a gRPC route on it); and a
// counting rule that counts 4xx and 5xx, 2 a hour, is not charged for
// it: the next two failures the origin answers are charged (500), the
// one after refused (429; on gRPC 200 with grpc-status 8).
func TestDelayedClientGoneIsLogged499(t *testing.T) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.Write([]byte("ok")) //nolint:errcheck // a test origin
	})
	h1, h2c := h1Upstream(t, handler), h2cUpstream(t, handler)
	for _, c := range []struct {
		name, http2 string
		grpc        bool
	}{{"HTTP/1.1", "off", false}, {"h2c", "on", false}, {"gRPC", "on", true}} {
		t.Run(c.name, func(t *testing.T) {
			origin, method := h1, "GET"
			if c.grpc {
				origin, method = h2c, "POST"
			}
			file := filepath.Join(t.TempDir(), "access.log")
			g := newTestGateway(t, `listen: {addr: "127.0.0.1:0", http2: `+c.http2+`}
admin: {addr: off}
reload: {watch: false}
access_log: {path: "`+file+`", format: json}
routes: [{path: /, upstream: "`+origin+`", grpc: `+strconv.FormatBool(c.grpc)+`}]
rules:
  - name: shape
    match: {paths: [/slow]}
    policies: [{algorithm: leaky_bucket, rate: 20/m, burst: 5, mode: shape}]
  - name: failures
    count: {statuses: ["4xx", "5xx"]}
    policies: [{algorithm: token_bucket, rate: 1/h, burst: 2}]
`)
			if err := g.Start(); err != nil {
				t.Fatal(err)
			}
			base := "http://" + g.Addr().String()
			// One connection a request: its close is its end.
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			if c.http2 == "on" {
				client = h2cClient()
			}
			// do returns the answer's status, or on gRPC 429 for
			// grpc-status 8 (RESOURCE_EXHAUSTED: the refusal).
			do := func(ctx context.Context, path string) (int, error) {
				req, _ := http.NewRequestWithContext(ctx, method, base+path, http.NoBody)
				if c.grpc {
					req.Header.Set("Content-Type", "application/grpc")
				}
				resp, err := client.Do(req)
				if err != nil {
					return 0, err
				}
				io.Copy(io.Discard, resp.Body) //nolint:errcheck // the trailers come after the body
				resp.Body.Close()
				if c.grpc && resp.StatusCode == 200 && resp.Trailer.Get("Grpc-Status")+resp.Header.Get("Grpc-Status") == "8" {
					return http.StatusTooManyRequests, nil
				}
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
			// The second waits 3s (20/m), its client leaving once the
			// gateway has decided it (so it surely has the request): a
			// margin a busy machine keeps.
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
			// Its end: the counting reservation it held is given back
			// then (on HTTP/1.1 once its connection is closed).
			frontendtest.Until(t, func() bool {
				return cancelled() == 1 && g.core.InFlight.Load() == 0 && (c.http2 == "on" || g.server.GetOpenConnectionsCount() == 0)
			})
			for i, want := range []int{500, 500, 429} {
				if code, err := do(context.Background(), "/fail"); code != want {
					t.Fatalf("failure %d after the delay its client left: %d %v, want %d (2 a hour: the delay not charged)", i+1, code, err, want)
				}
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
				{"/fail", 500, 0, "failures", "allowed"},
				{"/fail", 429, -1, "failures", "refused"},
			}
			if c.grpc {
				want[4].Status = 200 // a gRPC refusal: 200, grpc-status 8
				want[0].Bytes = -1
			}
			if len(got) != len(want) {
				t.Fatalf("access log:\n%s", data)
			}
			// Matched in any order: a line is written as its request
			// ends, which may be after the client has its answer.
			used := make([]bool, len(got))
			for _, w := range want {
				found := false
				for i, g := range got {
					if w.Bytes < 0 {
						g.Bytes = -1 // the refusal's body, a gRPC answer's: any size
					}
					if !used[i] && g == w {
						used[i], found = true, true
						break
					}
				}
				if !found {
					t.Errorf("no line %+v in the access log:\n%s", w, data)
				}
			}
		})
	}
}
