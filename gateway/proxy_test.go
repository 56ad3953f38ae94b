package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// dialRaw opens a connection to addr, writes raw on it and returns a
// reader of the answer. The connection closes with the test, and
// reading it times out after 5 s.
func dialRaw(t *testing.T, addr, raw string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

// rawExchange writes raw to the gateway at addr and reads n responses
// back on the same connection. With wait, it then reports whether the
// gateway closed the connection.
func rawExchange(t *testing.T, addr, raw string, n int, wait bool) ([]*http.Response, []string, bool) {
	t.Helper()
	c, br := dialRaw(t, addr, raw)
	var resps []*http.Response
	var bodies []string
	for i := 0; i < n; i++ {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i+1, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resps = append(resps, resp)
		bodies = append(bodies, string(b))
	}
	if !wait {
		return resps, bodies, false
	}
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	_, err := br.ReadByte()
	return resps, bodies, err == io.EOF
}

// Every client copy of X-Forwarded-For, -Proto and -Host is replaced: a
// second line must not reach the upstream beside the gateway's own. From a
// trusted proxy, all the X-Forwarded-For lines are kept, in order.
func TestForwardedDuplicateLines(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%q %q %q", r.Header.Values("X-Forwarded-For"),
			r.Header.Values("X-Forwarded-Proto"), r.Header.Values("X-Forwarded-Host"))
	}))
	defer srv.Close()
	raw := "GET / HTTP/1.1\r\nHost: a\r\n" +
		"X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-For: 7.7.7.7, 8.8.8.8\r\n" +
		"X-Forwarded-Proto: https\r\nX-Forwarded-Proto: https\r\n" +
		"X-Forwarded-Host: evil\r\nX-Forwarded-Host: evil\r\n\r\n"
	for _, tc := range []struct{ trusted, want string }{
		{"", `["127.0.0.1"] ["http"] ["a"]`},
		{"client_ip: {trusted_proxies: [127.0.0.0/8]}\n", `["6.6.6.6, 7.7.7.7, 8.8.8.8, 127.0.0.1"] ["http"] ["a"]`},
	} {
		g, _ := startTestGateway(t, tc.trusted+"routes: [{path: /, upstream: \""+srv.URL+"\"}]\n")
		_, bodies, _ := rawExchange(t, g.Addr().String(), raw, 1, false)
		if bodies[0] != tc.want {
			t.Errorf("trusted %q: origin saw %s, want %s", tc.trusted, bodies[0], tc.want)
		}
		g.Close()
	}
}

// Forwarded and X-Real-IP carry a client address as X-Forwarded-For
// does, and get the same trust: an untrusted client's are removed; a
// trusted proxy's X-Real-IP is kept, and its Forwarded lines are kept
// with the gateway's own hop appended. The gateway adds neither field
// when none came.
func TestForwardedAndRealIPTrust(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%q %q", r.Header.Values("Forwarded"), r.Header.Values("X-Real-IP"))
	}))
	defer srv.Close()
	planted := "GET / HTTP/1.1\r\nHost: a\r\n" +
		"Forwarded: for=6.6.6.6;proto=https\r\nForwarded: for=\"[2001:db8::7]\"\r\n" +
		"X-Real-IP: 6.6.6.6\r\nx-real-ip: 7.7.7.7\r\n\r\n"
	none := "GET / HTTP/1.1\r\nHost: a\r\n\r\n"
	for _, tc := range []struct{ trusted, raw, want string }{
		{"", planted, `[] []`},
		{"", none, `[] []`},
		{"client_ip: {trusted_proxies: [127.0.0.0/8]}\n", planted,
			`["for=6.6.6.6;proto=https, for=\"[2001:db8::7]\", for=127.0.0.1;proto=http"] ["6.6.6.6" "7.7.7.7"]`},
		{"client_ip: {trusted_proxies: [127.0.0.0/8]}\n", none, `[] []`},
	} {
		g, _ := startTestGateway(t, tc.trusted+"routes: [{path: /, upstream: \""+srv.URL+"\"}]\n")
		_, bodies, _ := rawExchange(t, g.Addr().String(), tc.raw, 1, false)
		if bodies[0] != tc.want {
			t.Errorf("trusted %q, request %q: origin saw %s, want %s", tc.trusted, tc.raw, bodies[0], tc.want)
		}
		g.Close()
	}
}

func TestAppendForwarded(t *testing.T) {
	got := appendForwarded(nil, [][]byte{[]byte("for=a"), nil}, netip.MustParseAddr("2001:db8::1"), valHTTPS)
	if string(got) != `for=a, for="[2001:db8::1]";proto=https` {
		t.Fatalf("appendForwarded: %s", got)
	}
}

// Connection and the fields it names are removed both ways, and an
// upstream's Connection: close does not close the client's connection;
// a client's own Connection: close still does.
func TestConnectionHeaderHopByHop(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/close":
			w.Header().Set("Connection", "close")
		default:
			w.Header().Set("Connection", "X-Bar")
			w.Header().Set("X-Bar", "1")
		}
		fmt.Fprintf(w, "conn=%q foo=%q", r.Header.Values("Connection"), r.Header.Values("X-Foo"))
	}))
	defer srv.Close()
	g, _ := startTestGateway(t, "routes: [{path: /, upstream: \""+srv.URL+"\"}]\n")
	defer g.Close()
	addr := g.Addr().String()

	resps, bodies, closed := rawExchange(t, addr,
		"GET /bar HTTP/1.1\r\nHost: a\r\nConnection: X-Foo\r\nX-Foo: bar\r\n\r\n"+
			"GET /close HTTP/1.1\r\nHost: a\r\n\r\n"+
			"GET /bar HTTP/1.1\r\nHost: a\r\n\r\n", 3, true)
	for i, resp := range resps {
		if resp.StatusCode != 200 || bodies[i] != `conn=[] foo=[]` {
			t.Errorf("response %d: %d %q, want 200 with no Connection or X-Foo at the origin", i+1, resp.StatusCode, bodies[i])
		}
		if v := resp.Header.Values("Connection"); len(v) > 0 {
			t.Errorf("response %d: Connection %q reached the client", i+1, v)
		}
		if resp.Header.Get("X-Bar") != "" {
			t.Errorf("response %d: X-Bar, named in the origin's Connection, reached the client", i+1)
		}
	}
	if closed {
		t.Error("the client connection was closed after the origin's Connection: close")
	}

	resps, _, closed = rawExchange(t, addr, "GET /bar HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 1, true)
	if !resps[0].Close || !closed {
		t.Errorf("client Connection: close: response Close %v, connection closed %v; want both", resps[0].Close, closed)
	}
}

// The upstream path is built from the normalized path routing matched
// when the client's path has dot segments, so that it cannot climb out
// of the route's base path; other paths go as sent, encodings kept.
func TestUpstreamPathDotSegments(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.RequestURI)
	}))
	defer srv.Close()
	g, _ := startTestGateway(t, "routes: [{host: nobase, path: /, upstream: \""+srv.URL+"\"}, "+
		"{path: /api/, upstream: \""+srv.URL+"/v2\"}, {path: /, upstream: \""+srv.URL+"/public\"}]\n")
	defer g.Close()
	for _, tc := range []struct{ host, path, want string }{
		{"a", "/../admin", "/public/admin"},
		{"a", "/%2e%2e/admin", "/public/admin"},
		{"a", "/%2E./admin", "/public/admin"},
		{"a", "/a/../../admin", "/public/admin"},
		{"a", "/a/..%2f..%2fadmin", "/public/admin"},
		{"a", "/a/./b/.", "/public/a/b/"},
		{"a", "/x/../a%20b%3F?q=%2F", "/public/a%20b%3F?q=%2F"},
		{"a", "/x/%2e%2e/api/z", "/v2/api/z"},
		{"a", "/api/../admin", "/public/admin"},
		// No dot segment: the path goes as sent.
		{"a", "/a%2Fb", "/public/a%2Fb"},
		{"a", "/a%20b?x=%2F", "/public/a%20b?x=%2F"},
		{"a", "/file.txt", "/public/file.txt"},
		{"a", "/a/..b/.c", "/public/a/..b/.c"},
		{"a", "/api/items?x=1", "/v2/api/items?x=1"},
		// Without a base path, only dot segments change.
		{"nobase", "/a/../b", "/b"},
		{"nobase", "/%2e%2e/b", "/b"},
		{"nobase", "/a%2Fb", "/a%2Fb"},
	} {
		_, bodies, _ := rawExchange(t, g.Addr().String(), "GET "+tc.path+" HTTP/1.1\r\nHost: "+tc.host+"\r\n\r\n", 1, false)
		if bodies[0] != tc.want {
			t.Errorf("%s %s: upstream saw %q, want %q", tc.host, tc.path, bodies[0], tc.want)
		}
	}
}

func TestHasDotSegment(t *testing.T) {
	for path, want := range map[string]bool{
		"/": false, "/a/b": false, "/file.txt": false, "/a/..b": false, "/.a": false, "/a%2Fb": false,
		"/.": true, "/..": true, "/./a": true, "/a/../b": true, "/%2e%2e/a": true, "/%2E/a": true,
		"/a/..%2Fb": true, "/a%2f..": true, "/a/.%2e": true,
	} {
		if got := hasDotSegment([]byte(path)); got != want {
			t.Errorf("hasDotSegment(%q) = %v, want %v", path, got, want)
		}
	}
	if got := string(appendEscapedPath(nil, []byte("/a b/%/?#/é/~!$&'()*+,;=:@"))); got != "/a%20b/%25/%3F%23/%C3%A9/~!$&'()*+,;=:@" {
		t.Errorf("appendEscapedPath: %s", got)
	}
}

// An upstream body ended by closing its connection (no length, not
// chunked) reaches an HTTP/1.0 keep-alive client whole, and the gateway
// then closes: that client cannot read chunks, so the close is the end.
func TestCloseDelimitedBodyToHTTP10Client(t *testing.T) {
	origin := rawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err == nil {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello")
		}
	})
	g, _ := startTestGateway(t, "routes: [{path: /, upstream: \""+origin+"\"}]\n")
	defer g.Close()
	_, bodies, closed := rawExchange(t, g.Addr().String(), "GET / HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\n\r\n", 1, true)
	if bodies[0] != "hello" || !closed {
		t.Fatalf("body %q, closed %v: want hello, then the connection closed", bodies[0], closed)
	}
}

// chunkedRequest is a POST with a chunked body of the given framing.
func chunkedRequest(framing string) string {
	return "POST /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + framing
}

// upstreamErrors is how many of the only route's exchanges counted as
// upstream errors.
func upstreamErrors(g *Gateway) float64 {
	var m dto.Metric
	if err := g.snap.Load().routes[0].upStatus[idxError].Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// A chunked body the client framed wrongly is the client's 400, not a
// 502 "upstream could not be reached" counted against the upstream; the
// connection closes, as the gateway cannot tell where the next request
// would start.
func TestBrokenChunkedBodyIsClientError(t *testing.T) {
	origin, _ := countingOrigin(t)
	g, _ := startTestGateway(t, "routes: [{path: /, upstream: \""+origin+"\"}]\n")
	for _, framing := range []string{
		"zz\r\nhello\r\n0\r\n\r\n",
		"-3\r\nhel\r\n0\r\n\r\n",
		"fffffffffffffffffffff\r\nhello\r\n0\r\n\r\n",
		"5\nhello\n0\n\n",
		"5\r\nhelloXX\r\n0\r\n\r\n",
	} {
		resps, _, closed := rawExchange(t, g.Addr().String(), chunkedRequest(framing), 1, true)
		if resps[0].StatusCode != http.StatusBadRequest || !closed {
			t.Errorf("chunks %q: %d, closed %v; want 400 and the connection closed", framing, resps[0].StatusCode, closed)
		}
	}
	if n := upstreamErrors(g); n != 0 {
		t.Errorf("%v upstream errors counted for the client's broken bodies", n)
	}
	resps, bodies, _ := rawExchange(t, g.Addr().String(), chunkedRequest("5\r\nhello\r\n0\r\n\r\n"), 1, false)
	if resps[0].StatusCode != 200 || bodies[0] != "hello" {
		t.Fatalf("well-framed chunks: %d %q", resps[0].StatusCode, bodies[0])
	}
}

// A chunked body announces no length: it is held to
// listen.max_request_body as it streams, and stopped with 413 past it.
// A body of exactly the limit passes whole.
func TestChunkedBodyHeldToMaxRequestBody(t *testing.T) {
	origin, _ := countingOrigin(t)
	g := newTestGateway(t, "listen: {addr: \"127.0.0.1:0\", max_request_body: 1000}\nadmin: {addr: \"off\"}\nreload: {watch: false}\n"+
		"routes: [{path: /, upstream: \""+origin+"\"}]\n")
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	chunks := func(n int) string { return strings.Repeat("64\r\n"+strings.Repeat("x", 100)+"\r\n", n) + "0\r\n\r\n" }
	resps, bodies, _ := rawExchange(t, g.Addr().String(), chunkedRequest(chunks(10)), 1, false)
	if resps[0].StatusCode != 200 || len(bodies[0]) != 1000 {
		t.Fatalf("1000 bytes at a limit of 1000: %d, %d bytes reached the upstream", resps[0].StatusCode, len(bodies[0]))
	}
	resps, bodies, _ = rawExchange(t, g.Addr().String(), chunkedRequest(chunks(11)), 1, false)
	if resps[0].StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("1100 bytes at a limit of 1000: %d with %d bytes, want 413", resps[0].StatusCode, len(bodies[0]))
	}
	if n := upstreamErrors(g); n != 0 {
		t.Errorf("%v upstream errors counted for the client's oversized body", n)
	}
}

// A body that ends before its Content-Length (the client half-closed) is
// the client's 400, not an upstream error.
func TestTruncatedBodyIsClientError(t *testing.T) {
	origin, _ := countingOrigin(t)
	g, _ := startTestGateway(t, "routes: [{path: /, upstream: \""+origin+"\"}]\n")
	c, br := dialRaw(t, g.Addr().String(), "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 10000000\r\n\r\n"+strings.Repeat("x", 100000))
	c.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("100 kB of 10 MB, then the end: %d, want 400", resp.StatusCode)
	}
	if n := upstreamErrors(g); n != 0 {
		t.Errorf("%v upstream errors counted for the client's short body", n)
	}
}
