package gateway

import (
	"os/exec"
	"strings"
	"testing"
)

// curlHTTP2 skips the test unless curl is installed with HTTP/2
// (Debian's is, through nghttp2).
func curlHTTP2(t *testing.T) {
	t.Helper()
	out, err := exec.Command("curl", "--version").Output()
	if err != nil {
		t.Skip("curl is not installed")
	}
	if !strings.Contains(string(out), "HTTP2") {
		t.Skip("this curl has no HTTP/2")
	}
}

// curl runs curl with args and returns the response head (with the
// trailers, which curl writes after the body's) and body.
func curl(t *testing.T, args ...string) (head, body string) {
	t.Helper()
	cmd := exec.Command("curl", append([]string{"-sS", "--max-time", "20", "-D", "/dev/stderr"}, args...)...)
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("curl %v: %v\n%s", args, err, se.String())
	}
	return strings.ToLower(se.String()), so.String()
}

// curl --http2-prior-knowledge (h2c), --http2 on plain HTTP (h2c by
// Upgrade) and --http2 over TLS (ALPN) through the
// gateway to an HTTP/1.1 and an h2c upstream: the response is HTTP/2,
// with the rate-limit fields and the upstream's trailer; over the limit,
// 429 with Retry-After and the problem body.
func TestCurlHTTP2ThroughGateway(t *testing.T) {
	curlHTTP2(t)
	h1 := h1Upstream(t, echo)
	h2 := h2cUpstream(t, echo)
	cfg := `rules:
  - {name: per-ip, policies: [{name: four, algorithm: fixed_window, limit: 4, window: 1m}]}
routes:
  - {path: /one/, upstream: "` + h1 + `"}
  - {path: /two/, upstream: "` + h2 + `", protocol: http2}
`
	for _, tc := range []struct {
		tls  bool
		flag string
	}{{false, "--http2-prior-knowledge"}, {false, "--http2"}, {true, "--http2"}} {
		_, base := startH2Gateway(t, tc.tls, cfg)
		args := []string{tc.flag}
		if tc.tls {
			args = append(args, "-k")
		}
		for _, p := range []struct{ path, proto string }{{"/one/x", "HTTP/1.1"}, {"/two/x", "HTTP/2.0"}} {
			head, body := curl(t, append(args, base+p.path)...)
			head = strings.TrimPrefix(head, "http/1.1 101 switching protocols\r\nconnection: upgrade\r\nupgrade: h2c\r\n\r\n")
			if !strings.HasPrefix(head, "http/2 200") || !strings.Contains(head, "ratelimit: \"four\";r=") ||
				!strings.Contains(head, "x-checksum: abc") || !strings.HasPrefix(body, p.proto+" /"+p.path[1:]) {
				t.Errorf("%s %s: head %q body %q", tc.flag, p.path, head, body)
			}
		}
		curl(t, append(args, base+"/one/x")...)
		curl(t, append(args, base+"/one/x")...)
		head, body := curl(t, append(args, base+"/one/x")...)
		if !strings.Contains(head, "http/2 429") || !strings.Contains(head, "retry-after: ") ||
			!strings.Contains(head, "content-type: application/problem+json") || !strings.Contains(body, `"violated-policies":["four"]`) {
			t.Errorf("%s refusal: head %q body %q", tc.flag, head, body)
		}
	}
}
