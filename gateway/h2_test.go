package gateway

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/testpki"
)

// startH2Gateway starts a gateway whose listener has http2 on: h2c, or
// TLS (with a fresh self-signed certificate) when tlsOn.
func startH2Gateway(t *testing.T, tlsOn bool, yaml string) (*Gateway, string) {
	t.Helper()
	listen := `listen: {addr: "127.0.0.1:0", http2: on}`
	scheme := "http"
	if tlsOn {
		cert, key := writeTestCert(t)
		listen = fmt.Sprintf(`listen: {addr: "127.0.0.1:0", http2: on, tls: {cert: %q, key: %q}}`, cert, key)
		scheme = "https"
	}
	g := newTestGateway(t, listen+`
admin: {addr: "127.0.0.1:0"}
reload: {watch: false}
`+yaml)
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g, scheme + "://" + g.Addr().String()
}

// writeTestCert writes a certificate for 127.0.0.1 and localhost and its
// key (internal/testpki), returning their paths.
func writeTestCert(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile, _ = testpki.Server(t)
	return certFile, keyFile
}

// h2cClient speaks h2c with prior knowledge; h2TLSClient h2 over TLS,
// trusting any certificate (the test's own).
func h2cClient() *http.Client {
	t := &http.Transport{Protocols: new(http.Protocols)}
	t.Protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: t}
}

func h2TLSClient() *http.Client {
	t := &http.Transport{Protocols: new(http.Protocols), TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	t.Protocols.SetHTTP2(true)
	return &http.Client{Transport: t}
}

// h1Upstream and h2cUpstream serve handler over HTTP/1.1 and over h2c
// (prior knowledge) on loopback.
func h1Upstream(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func h2cUpstream(t *testing.T, h http.Handler) string {
	srv := httptest.NewUnstartedServer(h)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// echo answers with the request's protocol, path and forwarded fields,
// and a trailer.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Trailer", "X-Checksum")
	w.Header().Set("Ratelimit", "upstream's own")
	fmt.Fprintf(w, "%s %s host=%s xff=%s proto=%s fhost=%s te=%s", r.Proto, r.URL.RequestURI(), r.Host,
		r.Header.Get("X-Forwarded-For"), r.Header.Get("X-Forwarded-Proto"), r.Header.Get("X-Forwarded-Host"), r.Header.Get("Te"))
	// Flushed: no Content-Length, with which curl does not show
	// trailers.
	http.NewResponseController(w).Flush()
	w.Header().Set("X-Checksum", "abc")
})

func TestH2ProxiesToH1AndH2Upstreams(t *testing.T) {
	h1 := h1Upstream(t, echo)
	h2 := h2cUpstream(t, echo)
	rules := `rules:
  - {name: per-ip, policies: [{rate: 1000/m}]}
routes:
  - {path: /one/, upstream: "` + h1 + `/base"}
  - {path: /two/, upstream: "` + h2 + `", protocol: http2}
`
	for _, tlsOn := range []bool{false, true} {
		_, base := startH2Gateway(t, tlsOn, rules)
		client, proto := h2cClient(), "http"
		if tlsOn {
			client, proto = h2TLSClient(), "https"
		}
		for _, tc := range []struct{ path, want string }{
			{"/one/a%2Fb?q=1", "HTTP/1.1 /base/one/a%2Fb?q=1 host=" + strings.TrimPrefix(h1, "http://") + " xff=127.0.0.1 proto=" + proto},
			{"/two/x/../y", "HTTP/2.0 /two/y host=" + strings.TrimPrefix(h2, "http://") + " xff=127.0.0.1 proto=" + proto},
		} {
			req, _ := http.NewRequest("GET", base+tc.path, nil)
			req.Header.Set("X-Forwarded-For", "203.0.113.9") // not trusted: dropped
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.ProtoMajor != 2 || resp.StatusCode != 200 || !strings.HasPrefix(string(b), tc.want) {
				t.Errorf("tls=%t %s: %s %d %q, want %q", tlsOn, tc.path, resp.Proto, resp.StatusCode, b, tc.want)
			}
			if got := resp.Trailer.Get("X-Checksum"); got != "abc" {
				t.Errorf("tls=%t %s: trailer %q", tlsOn, tc.path, got)
			}
			if got := resp.Header.Values("Ratelimit"); len(got) != 1 || !strings.Contains(got[0], `"per-ip";r=`) {
				t.Errorf("tls=%t %s: RateLimit %q (the gateway's replaces the upstream's)", tlsOn, tc.path, got)
			}
		}
	}
}

// The access log on the HTTP/2 path: the combined line's protocol is the
// request's, HTTP/2.0, with the status, size, rule and decision.
func TestH2AccessLog(t *testing.T) {
	file := filepath.Join(t.TempDir(), "access.log")
	g, base := startH2Gateway(t, false, `routes: [{path: /, upstream: "`+h1Upstream(t, echo)+`"}]
access_log: {path: "`+file+`", format: combined}
rules: [{name: one, policies: [{algorithm: fixed_window, limit: 1, window: 1h}]}]
`)
	for range 2 {
		resp, err := h2cClient().Get(base + "/a?b=1")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	g.Close()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	want := []string{`"GET /a?b=1 HTTP/2.0" 200 `, `"GET /a?b=1 HTTP/2.0" 429 `}
	if len(lines) != 2 {
		t.Fatalf("lines:\n%s", data)
	}
	for i, l := range lines {
		if !strings.Contains(l, want[i]) || !strings.HasSuffix(l, []string{"rule=one decision=allowed", "rule=one decision=refused"}[i]) || strings.Contains(l, `" 200 0 `) {
			t.Errorf("line %d = %q, want %q", i, l, want[i])
		}
	}
}

// Upstreams over TLS: h2 by ALPN for protocol http2, HTTP/1.1 otherwise.
func TestH2TLSUpstreams(t *testing.T) {
	h2 := httptest.NewUnstartedServer(echo)
	h2.EnableHTTP2 = true
	h2.StartTLS()
	t.Cleanup(h2.Close)
	h1 := httptest.NewTLSServer(echo)
	t.Cleanup(h1.Close)
	_, base := startH2Gateway(t, true, `routes:
  - {path: /two/, upstream: "`+h2.URL+`", protocol: http2}
  - {path: /one/, upstream: "`+h1.URL+`"}
`)
	for p, want := range map[string]string{"/two/x": "HTTP/2.0 /two/x", "/one/x": "HTTP/1.1 /one/x"} {
		resp, err := h2TLSClient().Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(string(b), want) || resp.Trailer.Get("X-Checksum") != "abc" {
			t.Errorf("%s: %d %q trailer %q, want %q", p, resp.StatusCode, b, resp.Trailer.Get("X-Checksum"), want)
		}
	}
}

// upstream.response_timeout holds on the HTTP/2 path: 504, or for a gRPC
// route DEADLINE_EXCEEDED; a body that starts in time may take longer.
func TestH2ResponseTimeout(t *testing.T) {
	slow := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			w.WriteHeader(200)
			http.NewResponseController(w).Flush()
			time.Sleep(400 * time.Millisecond)
			io.WriteString(w, "late but fine")
			return
		}
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	}
	up := h2cUpstream(t, http.HandlerFunc(slow))
	_, base := startH2Gateway(t, false, `upstream: {response_timeout: 200ms}
routes:
  - {path: /g/, upstream: "`+up+`", grpc: true}
  - {path: /, upstream: "`+up+`", protocol: http2}
`)
	c := h2cClient()
	resp, err := c.Get(base + "/slow")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 504 {
		t.Errorf("slow upstream: %d, want 504", resp.StatusCode)
	}
	resp, err = c.Get(base + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "late but fine" {
		t.Errorf("streamed body: %d %q", resp.StatusCode, b)
	}
	req, _ := http.NewRequest("POST", base+"/g/pkg.S/M", strings.NewReader(""))
	req.Header.Set("Content-Type", "application/grpc")
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Grpc-Status") != "4" {
		t.Errorf("slow gRPC upstream: %d grpc-status %q, want 200 and 4", resp.StatusCode, resp.Header.Get("Grpc-Status"))
	}
}

// Shutdown lets an HTTP/2 request in flight finish.
func TestH2ShutdownWaitsForRequests(t *testing.T) {
	up := h2cUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		io.WriteString(w, "done")
	}))
	g, base := startH2Gateway(t, false, `routes: [{path: /, upstream: "`+up+`", protocol: http2}]`)
	got := make(chan string, 1)
	go func() {
		resp, err := h2cClient().Get(base + "/")
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- string(b)
	}()
	for g.core.InFlight.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if b := <-got; b != "done" {
		t.Errorf("the request in flight got %q", b)
	}
}
