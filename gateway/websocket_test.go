package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rawOrigin is an origin on loopback that hands each connection, with a
// reader on it, to serve, and closes it after.
func rawOrigin(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c, bufio.NewReader(c))
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// upgradeOrigin is a raw origin: it sends each request it reads on
// seen, answers head (and after it, extra), then echoes until closed.
func upgradeOrigin(t *testing.T, head, extra string) (string, <-chan *http.Request) {
	t.Helper()
	seen := make(chan *http.Request, 4)
	return rawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		r, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		seen <- r
		io.WriteString(c, head+extra)
		io.Copy(c, br)
	}), seen
}

const wsRequest = "Host: a\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n" +
	"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"

const wsSwitching = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
	"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"

// An upgrade the origin refuses is answered as a normal response, and
// the client's connection stays under the gateway's limits: it is not
// tunnelled to the origin.
func TestWebSocketRefusedUpgrade(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("X-Origin", "1")
		w.WriteHeader(404)
		fmt.Fprintf(w, "no socket at %s", r.URL.Path)
	}))
	defer srv.Close()
	g, _ := startTestGateway(t, "routes: [{path: /, upstream: \""+srv.URL+"\"}]\n"+
		"rules: [{name: one, policies: [{algorithm: fixed_window, limit: 1, window: 1h}]}]\n")
	defer g.Close()
	resps, bodies, closed := rawExchange(t, g.Addr().String(),
		"GET /ws HTTP/1.1\r\n"+wsRequest+"\r\n"+
			"GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n"+
			"GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n", 3, true)
	if resps[0].StatusCode != 404 || bodies[0] != "no socket at /ws" || resps[0].Header.Get("X-Origin") != "1" {
		t.Errorf("refused upgrade: %d %q %v, want the origin's 404", resps[0].StatusCode, bodies[0], resps[0].Header)
	}
	for i, resp := range resps[1:] {
		if resp.StatusCode != 429 {
			t.Errorf("request %d after a refused upgrade: %d %q, want 429 (limit 1/h)", i+2, resp.StatusCode, bodies[i+1])
		}
	}
	if closed {
		t.Error("the client connection was closed")
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("origin hits: %d, want 1", n)
	}
}

// Only Upgrade: websocket is tunnelled; another protocol (h2c) is proxied
// as an ordinary request, its Upgrade and Connection fields removed.
func TestUpgradeOtherThanWebSocket(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "upgrade=%q conn=%q settings=%q", r.Header.Values("Upgrade"),
			r.Header.Values("Connection"), r.Header.Values("Http2-Settings"))
	}))
	defer srv.Close()
	g, _ := startTestGateway(t, "routes: [{path: /, upstream: \""+srv.URL+"\"}]\n"+
		"rules: [{name: one, policies: [{algorithm: fixed_window, limit: 1, window: 1h}]}]\n")
	defer g.Close()
	resps, bodies, _ := rawExchange(t, g.Addr().String(),
		"GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"+
			"HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"+
			"GET /again HTTP/1.1\r\nHost: a\r\n\r\n", 2, false)
	if resps[0].StatusCode != 200 || bodies[0] != `upgrade=[] conn=[] settings=[]` {
		t.Errorf("h2c upgrade: %d %q, want 200 with no Upgrade, Connection or HTTP2-Settings at the origin",
			resps[0].StatusCode, bodies[0])
	}
	if resps[1].StatusCode != 429 {
		t.Errorf("next request: %d %q, want 429 (limit 1/h)", resps[1].StatusCode, bodies[1])
	}
}

// An accepted upgrade is tunnelled, bytes the origin sends right after its
// 101 included, and the access log records 101.
func TestWebSocketTunnelAndAccessLog(t *testing.T) {
	origin, seen := upgradeOrigin(t, wsSwitching, "hello\n")
	file := filepath.Join(t.TempDir(), "access.log")
	g, _ := startTestGateway(t, "routes: [{path: /, upstream: \""+origin+"\"}]\n"+
		"access_log: {path: \""+file+"\", format: json}\n")
	c, br := dialRaw(t, g.Addr().String(), "GET /ws HTTP/1.1\r\n"+wsRequest+"\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 101 || resp.Header.Get("Sec-WebSocket-Accept") != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" ||
		!strings.EqualFold(resp.Header.Get("Upgrade"), "websocket") {
		t.Fatalf("upgrade: %d %v", resp.StatusCode, resp.Header)
	}
	<-seen
	if line, err := br.ReadString('\n'); line != "hello\n" {
		t.Fatalf("first bytes from the origin: %q, %v", line, err)
	}
	io.WriteString(c, "echo\n")
	if line, err := br.ReadString('\n'); line != "echo\n" {
		t.Fatalf("echo: %q, %v", line, err)
	}
	c.Close()
	g.Close()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"status":101`) {
		t.Errorf("access log: %s, want status 101", data)
	}
}

// The upgrade request gets the same path and X-Forwarded-* treatment as
// any other: no climbing out of the base path, no duplicate lines.
func TestWebSocketRequestRewrite(t *testing.T) {
	origin, seen := upgradeOrigin(t, wsSwitching, "")
	g, _ := startTestGateway(t, "routes: [{path: /, upstream: \""+origin+"/public\"}]\n")
	defer g.Close()
	_, br := dialRaw(t, g.Addr().String(), "GET /a/../%2e%2e/admin HTTP/1.1\r\n"+wsRequest+
		"X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-For: 7.7.7.7\r\n"+
		"X-Forwarded-Proto: https\r\nX-Forwarded-Proto: https\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 101 {
		t.Fatalf("upgrade: %d", resp.StatusCode)
	}
	r := <-seen
	if r.RequestURI != "/public/admin" {
		t.Errorf("origin saw path %q, want /public/admin", r.RequestURI)
	}
	if xff, xfp := r.Header.Values("X-Forwarded-For"), r.Header.Values("X-Forwarded-Proto"); len(xff) != 1 ||
		xff[0] != "127.0.0.1" || len(xfp) != 1 || xfp[0] != "http" {
		t.Errorf("origin saw X-Forwarded-For %q, X-Forwarded-Proto %q", xff, xfp)
	}
}

// A 101 with a large head (a long Set-Cookie) gets through: the upgrade
// path reads heads as large as the proxy path does.
func TestWebSocketLargeSwitchingHead(t *testing.T) {
	big := "Set-Cookie: s=" + strings.Repeat("x", 6000) + "\r\n"
	origin, _ := upgradeOrigin(t, strings.Replace(wsSwitching, "\r\n\r\n", "\r\n"+big+"\r\n", 1), "")
	g, _ := startTestGateway(t, "routes: [{path: /, upstream: \""+origin+"\"}]\n")
	defer g.Close()
	_, br := dialRaw(t, g.Addr().String(), "GET /ws HTTP/1.1\r\n"+wsRequest+"\r\n")
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 101") {
		t.Fatalf("status line %q (%v), want 101", line, err)
	}
}

// Tunnels count against upstream.max_conns: with 1, a second upgrade
// while the first tunnel is open gets 503, and a place frees when the
// first closes.
func TestWebSocketTunnelsCapped(t *testing.T) {
	origin, _ := upgradeOrigin(t, wsSwitching, "")
	g, _ := startTestGateway(t, "upstream: {max_conns: 1}\nroutes: [{path: /, upstream: \""+origin+"\"}]\n")
	defer g.Close()
	upgrade := func() (net.Conn, int) {
		c, br := dialRaw(t, g.Addr().String(), "GET /ws HTTP/1.1\r\n"+wsRequest+"\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c, resp.StatusCode
	}
	first, code := upgrade()
	if code != 101 {
		t.Fatalf("first upgrade: %d", code)
	}
	if _, code := upgrade(); code != 503 {
		t.Fatalf("second upgrade while the first tunnel is open: %d, want 503", code)
	}
	first.Close()
	var last int
	for range 50 { // the tunnel notices the close asynchronously
		var c net.Conn
		if c, last = upgrade(); last == 101 {
			c.Close()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if last != 101 {
		t.Fatalf("upgrade after the first tunnel closed: %d, want 101", last)
	}
}
