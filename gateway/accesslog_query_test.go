package gateway

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/racebuild"
	"github.com/valyala/fasthttp"
)

// access_log.query: the line keeps the query (keep, the default), none of
// it (drop), or every parameter with the named ones' values REDACTED, on
// both listeners and in both formats; the origin gets the query as sent.
func TestAccessLogQuery(t *testing.T) {
	const target = "/a?token=s3cr3t&page=2&API_KEY=k&%74oken=t2"
	for _, c := range []struct{ settings, want string }{
		{"", target},
		{"query: keep", target},
		{"query: drop", "/a"},
		{"query: redact, redact: [token, api_key]", "/a?token=REDACTED&page=2&API_KEY=REDACTED&%74oken=REDACTED"},
		{"query: redact", "/a?token=REDACTED&page=REDACTED&API_KEY=REDACTED&%74oken=REDACTED"},
	} {
		for _, format := range []string{"combined", "json"} {
			for _, h2 := range []bool{false, true} {
				got := make(chan string, 1)
				up := h1Upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					select {
					case got <- r.RequestURI:
					default:
					}
				}))
				file := filepath.Join(t.TempDir(), "access.log")
				yaml := `routes: [{path: /, upstream: "` + up + `"}]
access_log: {path: "` + file + `", format: ` + format + `, ` + c.settings + `}
`
				var g *Gateway
				var base string
				client := http.DefaultClient
				if h2 {
					g, base = startH2Gateway(t, false, yaml)
					client = h2cClient()
				} else {
					g, base = startTestGateway(t, yaml)
				}
				resp, err := client.Get(base + target)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				g.Close()
				data, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				line := strings.TrimSpace(string(data))
				want := c.want
				if format == "combined" {
					want = `"GET ` + want + ` HTTP/`
				} else {
					want = `"uri":"` + strings.ReplaceAll(want, "&", `\u0026`) + `"`
				}
				if !strings.Contains(line, want) || c.want != target && strings.Contains(line, "s3cr3t") {
					t.Errorf("%s, %s, h2 %v: line %s\nwant it to hold %s", c.settings, format, h2, line, want)
				}
				if u := <-got; u != target {
					t.Errorf("%s: the origin got %q, want %q", c.settings, u, target)
				}
			}
		}
	}
}

// The access log allocates nothing per request whatever its query
// setting.
func TestServeAllocationsWithAccessLogQuery(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	for _, q := range []string{"keep", "drop", "redact, redact: [token, api_key]"} {
		g := newTestGateway(t, demoRoute+neverRefuse+`access_log: {path: "`+filepath.Join(t.TempDir(), "a.log")+`", format: combined, query: `+q+`}`+"\n")
		var req fasthttp.Request
		req.SetRequestURI("http://example.com/items/42?token=s3cr3t&page=2")
		var ctx fasthttp.RequestCtx
		ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 5555}, nil)
		g.fast.Serve(&ctx)
		if n := testing.AllocsPerRun(200, func() {
			ctx.Response.Reset()
			g.fast.Serve(&ctx)
		}); n != 0 {
			t.Errorf("query: %s: %v allocations per request, want 0", q, n)
		}
	}
}

// The access log's cost per request, by query setting (keep is the
// default and the baseline).
func BenchmarkServeAccessLogQuery(b *testing.B) {
	for _, q := range []string{"keep", "drop", "redact, redact: [token, api_key]"} {
		b.Run(strings.Fields(q)[0], func(b *testing.B) {
			benchServeURI(b, demoRoute+neverRefuse+`access_log: {path: "`+filepath.Join(b.TempDir(), "a.log")+`", format: combined, query: `+q+`}`+"\n",
				"http://example.com/items/42?token=s3cr3t&page=2")
		})
	}
}

func benchServeURI(b *testing.B, yaml, uri string) {
	g := newTestGateway(b, yaml)
	var req fasthttp.Request
	req.SetRequestURI(uri)
	addr := &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 5555}
	var ctx fasthttp.RequestCtx
	b.ReportAllocs()
	for b.Loop() {
		serveOnce(g, &ctx, &req, addr)
	}
}
