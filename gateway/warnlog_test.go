package gateway

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/gateway/observe"
	"github.com/tollgate-dev/tollgate/internal/logtest"
)

// fasthttp's message for a connection it could not read a request from.
const serveConnFormat = "error when serving connection %q<->%q: %v"

// A thousand malformed requests quoting an API key write a few redacted
// lines, then one summary with the count, when the window ends (or at
// Close): never the key.
func TestWarnLogRedactsAndLimits(t *testing.T) {
	var buf logtest.Buffer
	now := time.Unix(1_700_000_000, 0)
	l := observe.NewWarnLog(slog.New(slog.NewTextHandler(&buf, nil)), time.Minute, 5, func() time.Time { return now })
	defer l.Close()
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	remote := &net.TCPAddr{IP: net.IPv4(203, 0, 113, 9), Port: 5555}
	err := errors.New(`error when reading request headers: malformed mime header line: "Authorization Bearer sk-live-123\"quoted\"": buffer size=99, contents: GET / HTTP/1.1\r\nX-API-Key: sk-live-456`)
	for range 1000 {
		l.Printf(serveConnFormat, local, remote, err)
	}
	l.Printf("The incoming connection cannot be served, because %d concurrent connections are served. "+
		"Try increasing Server.Concurrency", 100)
	out := buf.String()
	if n := strings.Count(out, "\n"); n != 6 {
		t.Errorf("%d lines for 1001 messages of two kinds, want 5 + 1:\n%s", n, out)
	}
	now = now.Add(time.Minute)
	l.Printf(serveConnFormat, local, remote, err)
	out = buf.String()
	if !strings.Contains(out, "similar=995") {
		t.Errorf("no summary of the 995 suppressed at the window's end:\n%s", out)
	}
	if n := strings.Count(out, "\n"); n != 8 {
		t.Errorf("%d lines after the window: want 6, a summary and the first of the new window:\n%s", n, out)
	}
	for _, secret := range []string{"sk-live", "Bearer", "203.0.113.9", "quoted"} {
		if strings.Contains(out, secret) {
			t.Errorf("the log carries %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, `malformed mime header line: \"…\"`) {
		t.Errorf("the kind of failure is lost:\n%s", out)
	}
}

// Through a running gateway: malformed requests carrying an API key leave
// the key out of the log, and a bounded number of lines.
func TestMalformedRequestsLogNoCredentials(t *testing.T) {
	var buf logtest.Buffer
	cfg, err := config.Parse("test.yaml", []byte("listen: {addr: \"127.0.0.1:0\"}\nadmin: {addr: \"off\"}\nreload: {watch: false}\nroutes: [{path: /, upstream: demo}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		bad := "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer sk-live-123\r\nX-Api-Key sk-live-456\r\n\r\n"
		if i%2 == 1 {
			bad = "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer sk-live-123\r\nX(Bad): sk-live-789\r\n\r\n"
		}
		c, br := dialRaw(t, g.Addr().String(), bad)
		io.Copy(io.Discard, br)
		c.Close()
	}
	g.Close()
	out := buf.String()
	if strings.Contains(out, "sk-live") || strings.Contains(out, "Bearer") {
		t.Errorf("credentials in the log:\n%s", out)
	}
	if n := strings.Count(out, "\n"); n > 12 {
		t.Errorf("%d log lines for 200 malformed requests, want at most the burst and a summary:\n%s", n, out)
	}
	if !strings.Contains(out, "similar=") {
		t.Errorf("no summary of the suppressed messages:\n%s", out)
	}
}
