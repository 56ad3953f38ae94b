package gateway

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/gateway/exchange"
	"github.com/tollgate-dev/tollgate/gateway/fastpath"
	"github.com/tollgate-dev/tollgate/gateway/observe"
	"github.com/tollgate-dev/tollgate/internal/logtest"
	"github.com/tollgate-dev/tollgate/internal/racebuild"
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

// OPTIONS * asks about the upstream server itself: it goes up as "*",
// not glued to the route's base path ("/public*", a path beside it).
func TestAsteriskFormGoesAsIs(t *testing.T) {
	lines := make(chan string, 1)
	origin := rawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		line, _ := br.ReadString('\n')
		lines <- strings.TrimSpace(line)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	})
	g, _ := startTestGateway(t, "routes: [{path: /, upstream: \""+origin+"/public\"}]\n")
	defer g.Close()
	rawExchange(t, g.Addr().String(), "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", 1, false)
	if got := <-lines; got != "OPTIONS * HTTP/1.1" {
		t.Fatalf("upstream request line %q, want OPTIONS * HTTP/1.1", got)
	}
}

// The upstream request is the gateway's own HTTP/1.1 message (RFC 9110
// §6.2: an intermediary sends its own version), whatever version the
// client wrote.
func TestUpstreamRequestIsHTTP11(t *testing.T) {
	lines := make(chan string, 1)
	origin := rawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		line, _ := br.ReadString('\n')
		lines <- strings.TrimSpace(line)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	})
	g, _ := startTestGateway(t, "routes: [{path: /, upstream: \""+origin+"\"}]\n")
	defer g.Close()
	for _, version := range []string{"HTTP/1.0", "HTTP/0.0", "HTTP/1.9"} {
		rawExchange(t, g.Addr().String(), "GET /v HTTP/"+version[5:]+"\r\nHost: a\r\n\r\n", 1, false)
		if got := <-lines; got != "GET /v HTTP/1.1" {
			t.Errorf("client %s: upstream request line %q, want GET /v HTTP/1.1", version, got)
		}
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
	if err := g.core.Snap.Load().Routes[0].UpStatus[observe.IdxError].Write(&m); err != nil {
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

// upstreamHopFields are the hop-by-hop fields no client may pass to the
// upstream, lower case (Connection and Transfer-Encoding are checked
// apart: the gateway frames the upstream exchange with its own).
var upstreamHopFields = map[string]bool{
	"keep-alive": true, "proxy-connection": true, "proxy-authenticate": true,
	"proxy-authorization": true, "te": true, "trailer": true, "upgrade": true,
}

// gatewayFields are the fields the gateway (or fasthttp, framing the
// request) writes itself, whatever the client's Connection named.
var gatewayFields = map[string]bool{
	"host": true, "content-length": true, "transfer-encoding": true, "connection": true,
	"x-forwarded-for": true, "x-forwarded-proto": true, "x-forwarded-host": true,
}

// FuzzUpstreamRequest: whatever request a client sends (that the server
// reads and serve does not refuse), building the upstream request from it
// never panics, and nothing forbidden reaches the upstream: one head, a
// request line of three parts, every field name a token, no CR, LF or
// NUL in a value, no hop-by-hop field and none the client's Connection
// named, Host the upstream's, X-Forwarded-For ending with the peer (and
// only the peer from an untrusted one, who can plant no Forwarded or
// X-Real-IP either), and the path, percent-decoded and resolved, under
// the route's base path.
func FuzzUpstreamRequest(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /a/../../admin?x=%2F HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /%2e%2e/%2E./admin HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /a/..%2f..%2fadmin HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET http://evil.example/../x HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET //evil.example/x HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: a\r\nConnection: X-Foo, keep-alive, Upgrade\r\nX-Foo: 1\r\nKeep-Alive: 5\r\nUpgrade: h2c\r\nTE: trailers\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\nConnection: Cookie\r\nCookie: a=1\r\nProxy-Authorization: Basic eA==\r\nProxy-Connection: keep-alive\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 6.6.6.6\r\nX-Forwarded-For: 7.7.7.7\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: evil\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: a\r\nForwarded: for=6.6.6.6\r\nX-Real-IP: 6.6.6.6\r\n\r\n",
		"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
		"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
		"GET /x HTTP/1.0\r\nHost: a\r\nX-Folded: a\r\n b\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	snap := &exchange.Snapshot{Trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	rt := &exchange.Route{BasePath: "/base", HostHdr: "up.example:8080"}
	f.Fuzz(func(t *testing.T, raw []byte, trustedPeer bool) {
		var in fasthttp.Request
		// Bounded, as the server reads: Read would allocate whatever
		// Content-Length says.
		if err := in.ReadLimitBody(bufio.NewReader(bytes.NewReader(raw)), 1<<16); err != nil {
			return // the server answers 400 or 431
		}
		if !fastpath.ValidFieldNames(in.Header.RawHeaders()) {
			return // serve answers 400
		}
		var named []string
		for _, v := range in.Header.PeekAll("Connection") {
			fastpath.ForEachToken(v, func(b []byte) { named = append(named, strings.ToLower(string(b))) })
		}
		peer := netip.MustParseAddr("192.0.2.1")
		if trustedPeer {
			peer = netip.MustParseAddr("10.0.0.1")
		}
		var ctx fasthttp.RequestCtx
		ctx.Init(&in, net.TCPAddrFromAddrPort(netip.AddrPortFrom(peer, 1234)), nil)
		req := &ctx.Request
		var scratch [128]byte
		fastpath.RemoveRequestHop(&req.Header)
		fastpath.SetForwarded(&ctx, snap, scratch[:0])
		fastpath.SetUpstreamPath(req, rt, scratch[:0])
		fastpath.SetUpstream(req, rt)
		req.URI().DisablePathNormalizing = true // as the upstream client has it
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		if err := req.Write(w); err != nil {
			return // fasthttp refuses to write it: nothing reaches the upstream
		}
		w.Flush()
		checkUpstreamHead(t, out.Bytes(), peer.String(), trustedPeer, named)
	})
}

// checkUpstreamHead checks the head of a request the gateway wrote for
// the upstream; see FuzzUpstreamRequest.
func checkUpstreamHead(t *testing.T, wire []byte, peer string, trusted bool, named []string) {
	t.Helper()
	end := bytes.Index(wire, []byte("\r\n\r\n"))
	if end < 0 {
		t.Fatalf("no end of head in %q", wire)
	}
	lines := strings.Split(string(wire[:end]), "\r\n")
	parts := strings.Split(lines[0], " ")
	if len(parts) != 3 || !strings.HasPrefix(parts[2], "HTTP/1.") {
		t.Fatalf("request line %q", lines[0])
	}
	for _, c := range []byte(lines[0]) {
		if c < 0x20 || c == 0x7f {
			t.Fatalf("control byte in the request line %q", lines[0])
		}
	}
	uri := parts[1]
	p, _, _ := strings.Cut(uri, "?")
	if uri == "*" && parts[0] != "OPTIONS" {
		t.Fatalf("asterisk-form in %q", lines[0])
	}
	if uri != "*" {
		decoded, err := url.PathUnescape(p)
		if err != nil {
			decoded = p // left encoded: an upstream cannot decode it either
		}
		if c := path.Clean(decoded); c != "/base" && !strings.HasPrefix(c, "/base/") {
			t.Fatalf("upstream path %q (%q resolved) is outside /base", p, c)
		}
	}
	seen := map[string][]string{}
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(l, ":")
		if !ok || !fastpath.ValidFieldNames([]byte(name+":\r\n")) {
			t.Fatalf("field line %q: the name is not a token", l)
		}
		if strings.ContainsAny(value, "\r\n\x00") {
			t.Fatalf("field line %q: CR, LF or NUL in the value", l)
		}
		lower := strings.ToLower(name)
		value = strings.TrimSpace(value)
		seen[lower] = append(seen[lower], value)
		if upstreamHopFields[lower] {
			t.Fatalf("hop-by-hop field %q reached the upstream", l)
		}
	}
	for _, n := range named {
		if !gatewayFields[n] && len(seen[n]) > 0 {
			t.Fatalf("%q, named in the client's Connection, reached the upstream", n)
		}
	}
	if c := seen["connection"]; len(c) > 1 || len(c) == 1 && !strings.EqualFold(c[0], "close") {
		t.Fatalf("Connection %q reached the upstream", c)
	}
	if h := seen["host"]; len(h) != 1 || h[0] != "up.example:8080" {
		t.Fatalf("Host %q, want the upstream's", h)
	}
	xff := seen["x-forwarded-for"]
	if len(xff) != 1 || !(xff[0] == peer || trusted && strings.HasSuffix(xff[0], ", "+peer)) {
		t.Fatalf("X-Forwarded-For %q from peer %s (trusted %v)", xff, peer, trusted)
	}
	if !trusted && (len(seen["forwarded"]) > 0 || len(seen["x-real-ip"]) > 0) {
		t.Fatalf("an untrusted client's Forwarded %q or X-Real-IP %q reached the upstream", seen["forwarded"], seen["x-real-ip"])
	}
}

// While an upstream is down, its errors are logged a few times per route
// and window, then counted, not once per request.
func TestUpstreamErrorsLogLimited(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	var buf logtest.Buffer
	cfg, err := config.Parse("test.yaml", []byte("listen: {addr: \"127.0.0.1:0\"}\nadmin: {addr: \"off\"}\nreload: {watch: false}\n"+
		"routes: [{path: /, upstream: \""+down+"\"}]\n"))
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
	for range 30 {
		resps, _, _ := rawExchange(t, g.Addr().String(), "GET / HTTP/1.1\r\nHost: a\r\n\r\n", 1, false)
		if resps[0].StatusCode != http.StatusBadGateway {
			t.Fatalf("status %d, want 502", resps[0].StatusCode)
		}
	}
	g.Close()
	out := buf.String()
	if n := strings.Count(out, "msg=\"upstream error\""); n != 10 {
		t.Errorf("%d upstream error lines for 30 failed requests, want 10:\n%s", n, out)
	}
	if !strings.Contains(out, "similar=20") {
		t.Errorf("no summary of the 20 others:\n%s", out)
	}
}

// A response field whose name is not a token ("Bad Name", which fasthttp
// reads) does not reach the client; the rest of the response does.
func TestInvalidResponseFieldNameRemoved(t *testing.T) {
	origin := rawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err == nil {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nBad Name: x\r\nX-Good: y\r\n\r\nok")
		}
	})
	g, _ := startTestGateway(t, "routes: [{path: /, upstream: \""+origin+"\"}]\n")
	defer g.Close()
	_, br := dialRaw(t, g.Addr().String(), "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	head, err := br.ReadString('\n')
	for err == nil {
		var line string
		if line, err = br.ReadString('\n'); line == "\r\n" {
			break
		}
		head += line
	}
	if strings.Contains(head, "Bad Name") || !strings.Contains(head, "X-Good: y") {
		t.Fatalf("response head:\n%s", head)
	}
}

// Removing the hop-by-hop fields allocates nothing, with fields named in
// Connection and standard hop fields present.
func TestRemoveRequestHopAllocations(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	var h fasthttp.RequestHeader
	fill := func() {
		h.Set("Connection", "keep-alive, X-Hop")
		h.Set("X-Hop", "1")
		h.Set("Keep-Alive", "timeout=5")
		h.Set("Te", "trailers")
	}
	fill()
	fastpath.RemoveRequestHop(&h)
	if len(h.Peek("X-Hop")) != 0 || len(h.Peek("Keep-Alive")) != 0 || len(h.Peek("Te")) != 0 {
		t.Fatalf("hop fields left: %s", h.Header())
	}
	n := testing.AllocsPerRun(200, func() {
		fill()
		fastpath.RemoveRequestHop(&h)
	})
	if n != 0 {
		t.Errorf("%v allocations per call, want 0", n)
	}
}
