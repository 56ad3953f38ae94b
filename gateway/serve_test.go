package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/fastlimit"
	"github.com/tollgate-dev/tollgate/gateway/exchange"
	"github.com/tollgate-dev/tollgate/internal/frontendtest"
	"github.com/tollgate-dev/tollgate/rules"
)

// countingOrigin is a raw origin that answers every request it reads 200
// with the body it received, and counts the requests on the returned
// channel.
func countingOrigin(t *testing.T) (string, <-chan string) {
	t.Helper()
	seen := make(chan string, 16)
	return rawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		for {
			r, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			b, err := io.ReadAll(r.Body)
			if err != nil {
				return
			}
			seen <- r.Method + " " + r.URL.Path
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(b))+"\r\n\r\n"+string(b))
		}
	}), seen
}

// A field name that is not a token (RFC 9110 §5.1) is refused with 400 and
// the connection closed, before anything reaches the upstream: an
// upstream reading "Transfer Encoding" as Transfer-Encoding would frame
// the body otherwise than the gateway did.
func TestInvalidFieldNameRefused(t *testing.T) {
	origin, seen := countingOrigin(t)
	g, _ := startTestGateway(t, "routes: [{path: /, upstream: \""+origin+"\"}]\n")
	for _, head := range []string{
		"Transfer Encoding: chunked\r\nContent-Length: 5\r\n",
		"X-A b: 1\r\n",
		"X-Ok: 1\r\nX\tTab: 1\r\n",
		"Foo Bar: 1\r\n folded continuation\r\n",
	} {
		raw := "POST /x HTTP/1.1\r\nHost: a\r\n" + head + "\r\nhello"
		resps, _, closed := rawExchange(t, g.Addr().String(), raw, 1, true)
		if resps[0].StatusCode != http.StatusBadRequest || !closed {
			t.Errorf("%q: %d, closed %v; want 400 and the connection closed", head, resps[0].StatusCode, closed)
		}
	}
	select {
	case r := <-seen:
		t.Fatalf("%s reached the upstream", r)
	default:
	}
	// Valid names, folded lines and odd but legal tokens pass.
	raw := "POST /ok HTTP/1.1\r\nHost: a\r\nX-Folded: a\r\n b\r\nX!#$%&'*+.^_`|~9: 1\r\nContent-Length: 5\r\n\r\nhello"
	resps, bodies, _ := rawExchange(t, g.Addr().String(), raw, 1, false)
	if resps[0].StatusCode != 200 || bodies[0] != "hello" {
		t.Fatalf("valid names: %d %q", resps[0].StatusCode, bodies[0])
	}
}

// A multipart/form-data body is a body like any other: it reaches the
// upstream byte for byte (not parsed and written anew, which dropped its
// preamble, epilogue and part fields), and one announced over
// listen.max_request_body is refused 413 at once, not read first.
func TestMultipartBodyPassesUntouched(t *testing.T) {
	origin, _ := countingOrigin(t)
	g := startLimitedGateway(t, "max_request_body: 1000", origin)
	body := "preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\nX-Extra:  spaced\r\n\r\nhello\r\n--XyZ--\r\nepilogue"
	head := "POST /mp HTTP/1.1\r\nHost: a\r\nContent-Type: multipart/form-data; boundary=XyZ\r\n"
	resps, bodies, _ := rawExchange(t, g.Addr().String(), head+"Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body, 1, false)
	if resps[0].StatusCode != 200 || bodies[0] != body {
		t.Errorf("multipart body: %d, upstream got %q, want %q", resps[0].StatusCode, bodies[0], body)
	}
	// 1 MB announced, 16 KiB of it sent: the answer comes without the
	// rest (fasthttp reads up to 8 KiB of a body before the handler).
	_, br := dialRaw(t, g.Addr().String(), head+"Content-Length: 1000000\r\n\r\n--XyZ\r\n\r\n"+strings.Repeat("x", 16<<10))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("1 MB multipart body announced at a limit of 1000: %v, want 413 before the body", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("1 MB multipart body announced at a limit of 1000: %d, want 413", resp.StatusCode)
	}
}

// The gateway limits with fastlimit's sequence: for the same rules and
// request it answers what fastlimit.Middleware in front of the same
// origin answers, allowed (the origin's response and the rate-limit
// headers) and refused (the refusal's status, headers and body), GET and
// HEAD.
func TestServeAnswersAsFastlimitMiddleware(t *testing.T) {
	for _, method := range []string{fasthttp.MethodGet, fasthttp.MethodHead} {
		// A burst of 2: each side's first request is allowed, its
		// second refused. One gateway per side, so that both start
		// with a full bucket.
		yaml := demoRoute + "rules: [{name: per-ip, policies: [{rate: 1/h, burst: 2}]}]\n"
		g, ref := newTestGateway(t, yaml), newTestGateway(t, yaml)
		mw := fastlimit.Middleware(func() *rules.Engine { return ref.core.Snap.Load().Engine }, exchange.Demo)
		addr := &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 5555}
		for i, want := range []int{200, 200, 429} {
			var req fasthttp.Request
			req.Header.SetMethod(method)
			req.SetRequestURI("http://example.com/items/42")
			var got, exp fasthttp.RequestCtx
			got.Init(&req, addr, nil)
			exp.Init(&req, addr, nil)
			g.fast.Serve(&got)
			mw(&exp)
			if got.Response.StatusCode() != want {
				t.Fatalf("%s #%d: gateway answered %d, want %d", method, i, got.Response.StatusCode(), want)
			}
			if g, e := got.Response.String(), exp.Response.String(); g != e {
				t.Errorf("%s #%d: the gateway answered\n%s\nfastlimit.Middleware\n%s", method, i, g, e)
			}
		}
	}
}

// Every answer the gateway writes itself (no route, a gRPC route asked
// for HTTP/1.1) is problem+json with X-Content-Type-Options: nosniff and
// Cache-Control: no-store, on each front end: HTTP/1.1 (fasthttp), HTTP/2
// (h2c) and the gRPC route's refusal of what is not gRPC. The HTTP/1.1
// problem() lacked nosniff before it was written by
// fastlimit.WriteProblem.
func TestProblemsSendNosniff(t *testing.T) {
	_, h1 := startTestGateway(t, "routes: [{host: a.test, path: /, upstream: demo}]\n")
	_, h2 := startH2Gateway(t, false, "routes: [{host: grpc.test, path: /, upstream: \"http://127.0.0.1:9\", grpc: true}, {host: a.test, path: /, upstream: demo}]\n")
	for _, c := range []struct {
		name, base, host string
		client           *http.Client
		want             int
	}{
		{"HTTP/1.1 no route", h1, "nowhere.test", http.DefaultClient, http.StatusNotFound},
		{"HTTP/2 no route", h2, "nowhere.test", h2cClient(), http.StatusNotFound},
		{"HTTP/2 gRPC route, not gRPC", h2, "grpc.test", h2cClient(), http.StatusUnsupportedMediaType},
	} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			req, _ := http.NewRequest(method, c.base+"/x", nil)
			req.Host = c.host
			resp, err := c.client.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, method, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			h := resp.Header
			if resp.StatusCode != c.want || h.Get("X-Content-Type-Options") != "nosniff" ||
				h.Get("Content-Type") != rules.ContentTypeProblem || h.Get("Cache-Control") != "no-store" {
				t.Errorf("%s %s: %d, X-Content-Type-Options %q, Content-Type %q, Cache-Control %q; want %d, nosniff, %s, no-store",
					c.name, method, resp.StatusCode, h.Get("X-Content-Type-Options"), h.Get("Content-Type"), h.Get("Cache-Control"),
					c.want, rules.ContentTypeProblem)
			}
			if method == http.MethodHead && len(body) != 0 || method == http.MethodGet && !strings.HasPrefix(string(body), `{"type":"about:blank"`) {
				t.Errorf("%s %s: body %q", c.name, method, body)
			}
		}
	}
}

// The gateway's HTTP/1.1 (fasthttp), HTTP/2 (h2c) and gRPC paths answer
// the front ends' one table of cases (frontendtest) as the middleware and
// forward-auth do: they carry out the decision with fastlimit's and
// httplimit's steps. A delayed request whose client went away reaches no
// upstream on any of them.
func TestFrontEndTable(t *testing.T) {
	start := func(t *testing.T, http2, grpc bool, rc rules.Config) *frontendtest.Running {
		origin, served := frontendtest.Origin()
		var up, listen string
		switch {
		case grpc:
			up = h2cUpstream(t, origin)
			listen = `listen: {addr: "127.0.0.1:0", http2: on}`
		case http2:
			up = h1Upstream(t, origin)
			listen = `listen: {addr: "127.0.0.1:0", http2: on}`
		default:
			up = h1Upstream(t, origin)
			listen = `listen: {addr: "127.0.0.1:0"}`
		}
		cfg, err := config.Parse("test.yaml", []byte(listen+"\nadmin: {addr: off}\nreload: {watch: false}\n"+
			"routes: [{path: /, upstream: \""+up+"\", grpc: "+strconv.FormatBool(grpc)+"}]\n"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Config = rc
		g, err := New(cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		run := &frontendtest.Running{URL: "http://" + g.Addr().String(), Served: served}
		run.Cancelled = func() uint64 {
			var m dto.Metric
			g.core.M.DelaysCancelled.Write(&m) //nolint:errcheck // a counter's Write does not fail
			return uint64(m.GetCounter().GetValue())
		}
		// A decision is observed before its delay starts.
		decided := func() uint64 {
			var m dto.Metric
			g.core.M.DecisionTime.Write(&m) //nolint:errcheck // a histogram's Write does not fail
			return m.GetHistogram().GetSampleCount()
		}
		run.Received = func() int { return int(decided()) }
		if http2 {
			run.Client = h2cClient()
			run.Ended = func(t *testing.T, n int) {
				frontendtest.Until(t, func() bool { return decided() >= uint64(n) && g.core.InFlight.Load() == 0 })
			}
		} else {
			// One connection a request: its close is its end.
			run.Client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			run.Ended = func(t *testing.T, n int) {
				frontendtest.Until(t, func() bool { return decided() >= uint64(n) && g.server.GetOpenConnectionsCount() == 0 })
			}
		}
		return run
	}
	frontendtest.Run(t, frontendtest.FrontEnd{Name: "gateway HTTP/1.1", Start: func(t *testing.T, rc rules.Config) *frontendtest.Running {
		return start(t, false, false, rc)
	}})
	frontendtest.Run(t, frontendtest.FrontEnd{Name: "gateway HTTP/2", Start: func(t *testing.T, rc rules.Config) *frontendtest.Running {
		return start(t, true, false, rc)
	}})
	frontendtest.Run(t, frontendtest.FrontEnd{Name: "gateway gRPC", GRPC: true, Start: func(t *testing.T, rc rules.Config) *frontendtest.Running {
		return start(t, true, true, rc)
	}})
}
