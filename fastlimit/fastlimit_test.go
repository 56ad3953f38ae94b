package fastlimit_test

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/fastlimit"
	"github.com/tollgate-dev/tollgate/internal/racebuild"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

func newEngine(t testing.TB, cfg rules.Config) *rules.Engine {
	t.Helper()
	st, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e, err := rules.New(cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// serve runs h on a loopback fasthttp server and returns its base URL.
func serve(t *testing.T, h fasthttp.RequestHandler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: h}
	done := make(chan struct{})
	go func() {
		srv.Serve(ln)
		close(done)
	}()
	t.Cleanup(func() {
		srv.Shutdown()
		<-done
	})
	return "http://" + ln.Addr().String()
}

func TestMiddlewareOverRealHTTP(t *testing.T) {
	e := newEngine(t, rules.Config{
		Rules: []rules.Rule{{
			Name:     "api",
			Match:    rules.Match{PathPrefixes: []string{"/api/"}},
			Key:      rules.Key{"header:X-API-Key"},
			Policies: []rules.Policy{{Algorithm: "fixed_window", Limit: 2, Window: "1h"}},
		}},
		Headers: rules.Headers{Styles: []string{rules.StyleDraft10, rules.StyleLegacy}},
	})
	reached := 0
	base := serve(t, fastlimit.Middleware(func() *rules.Engine { return e }, func(ctx *fasthttp.RequestCtx) {
		reached++
		ctx.SetBodyString("handler")
	}))
	do := func(method, path, key string) (*http.Response, string) {
		req, _ := http.NewRequest(method, base+path, nil)
		if key != "" {
			req.Header.Set("X-API-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	for i := range 2 {
		resp, body := do("GET", "/api/x", "k1")
		if resp.StatusCode != 200 || body != "handler" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
		if resp.Header.Get("Ratelimit-Policy") != `"api";q=2;w=3600` {
			t.Errorf("RateLimit-Policy = %q", resp.Header.Get("Ratelimit-Policy"))
		}
	}
	resp, body := do("GET", "/api/x", "k1")
	if resp.StatusCode != 429 || resp.Header.Get("Content-Type") != "application/problem+json" ||
		!strings.Contains(body, `"status":429`) || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("refusal: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	resp, body = do("HEAD", "/api/x", "k1")
	if resp.StatusCode != 429 || body != "" {
		t.Fatalf("HEAD refusal: %d %q", resp.StatusCode, body)
	}
	// Another key has its own counter; a request without the key, or
	// outside /api/, is not limited.
	if resp, _ := do("GET", "/api/x", "k2"); resp.StatusCode != 200 {
		t.Fatalf("other key: %d", resp.StatusCode)
	}
	if resp, _ := do("GET", "/api/x", ""); resp.StatusCode != 200 || resp.Header.Get("Ratelimit") != "" {
		t.Fatalf("no key: %d %v", resp.StatusCode, resp.Header)
	}
	if reached != 4 {
		t.Fatalf("handler reached %d times, want 4", reached)
	}
}

// The request view reads a fasthttp request without allocating.
func TestRequestViewDoesNotAllocate(t *testing.T) {
	var ctx fasthttp.RequestCtx
	var req fasthttp.Request
	req.SetRequestURI("http://api.example.com/items/42?page=3&api_key=abc")
	req.Header.Set("X-API-Key", "secret")
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4000}, nil)
	r := fastlimit.Request{Ctx: &ctx}
	peer := netip.MustParseAddr("192.0.2.1")
	check := func() {
		if r.Method() != "GET" || r.Host() != "api.example.com" || r.Path() != "/items/42" {
			t.Fatalf("view: %q %q %q", r.Method(), r.Host(), r.Path())
		}
		if v, ok := r.Header("X-Api-Key"); !ok || v != "secret" {
			t.Fatalf("header: %q %v", v, ok)
		}
		if v, ok := r.Query("api_key"); !ok || v != "abc" {
			t.Fatalf("query: %q %v", v, ok)
		}
		if a := r.RemoteAddr(); a.Addr() != peer || a.Port() != 4000 {
			t.Fatalf("remote: %v", a)
		}
	}
	check()
	if n := testing.AllocsPerRun(100, check); n != 0 {
		t.Fatalf("request view allocates %v times per request", n)
	}
}

// An allowed request keyed by IP costs the engine's allocations only.
func TestMiddlewareAllocations(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	e := newEngine(t, rules.Config{Rules: []rules.Rule{{
		Name: "ip", Policies: []rules.Policy{{Rate: "1000000/s", Burst: 1000}},
	}}})
	h := fastlimit.Middleware(func() *rules.Engine { return e }, func(ctx *fasthttp.RequestCtx) {})
	var ctx fasthttp.RequestCtx
	var req fasthttp.Request
	req.SetRequestURI("http://example.com/")
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4000}, nil)
	h(&ctx)
	n := testing.AllocsPerRun(1000, func() {
		ctx.Response.Reset()
		h(&ctx)
	})
	// The header values are written into a buffer on the stack.
	if n != 0 {
		t.Fatalf("%v allocations per allowed request, want 0", n)
	}
}

func BenchmarkMiddlewareAllowed(b *testing.B) {
	e := newEngine(b, rules.Config{Rules: []rules.Rule{{
		Name: "ip", Policies: []rules.Policy{{Rate: "1000000000/s", Burst: 1000000}},
	}}})
	h := fastlimit.Middleware(func() *rules.Engine { return e }, func(ctx *fasthttp.RequestCtx) {})
	var ctx fasthttp.RequestCtx
	var req fasthttp.Request
	req.SetRequestURI("http://example.com/")
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4000}, nil)
	b.ReportAllocs()
	for b.Loop() {
		ctx.Response.Reset()
		h(&ctx)
	}
}

// A refused request costs no allocation: the refusal's headers and body
// are written into buffers on the stack and copied by fasthttp.
func TestMiddlewareRefusalAllocations(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	e := newEngine(t, rules.Config{Rules: []rules.Rule{{
		Name: "ip", Policies: []rules.Policy{{Rate: "1/h", Burst: 1}},
	}}})
	h := fastlimit.Middleware(func() *rules.Engine { return e }, func(ctx *fasthttp.RequestCtx) {})
	var ctx fasthttp.RequestCtx
	var req fasthttp.Request
	req.SetRequestURI("http://example.com/items/42")
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4000}, nil)
	h(&ctx)
	h(&ctx)
	if ctx.Response.StatusCode() != 429 {
		t.Fatalf("status %d", ctx.Response.StatusCode())
	}
	if n := testing.AllocsPerRun(1000, func() { h(&ctx) }); n != 0 {
		t.Fatalf("%v allocations per refused request, want 0", n)
	}
}

// BenchmarkMiddlewareRefused is the refusal path: decide, then write the
// 429 with its headers and problem body.
func BenchmarkMiddlewareRefused(b *testing.B) {
	e := newEngine(b, rules.Config{Rules: []rules.Rule{{
		Name: "ip", Policies: []rules.Policy{{Rate: "1/h", Burst: 1}},
	}}})
	h := fastlimit.Middleware(func() *rules.Engine { return e }, func(ctx *fasthttp.RequestCtx) {})
	var ctx fasthttp.RequestCtx
	var req fasthttp.Request
	req.SetRequestURI("http://example.com/items/42")
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4000}, nil)
	h(&ctx)
	b.ReportAllocs()
	for b.Loop() {
		h(&ctx)
	}
	if ctx.Response.StatusCode() != 429 {
		b.Fatalf("status %d", ctx.Response.StatusCode())
	}
}

func BenchmarkBareHandler(b *testing.B) {
	h := func(ctx *fasthttp.RequestCtx) {}
	var ctx fasthttp.RequestCtx
	var req fasthttp.Request
	req.SetRequestURI("http://example.com/")
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4000}, nil)
	b.ReportAllocs()
	for b.Loop() {
		ctx.Response.Reset()
		h(&ctx)
	}
}

// A header key part reads the field's first line, as fasthttp's Peek
// does: sending the API key header twice does not open a new counter.
func TestHeaderKeyIgnoresExtraLines(t *testing.T) {
	e := newEngine(t, rules.Config{Rules: []rules.Rule{{
		Name:     "per-key",
		Key:      rules.Key{"header:X-API-Key"},
		Policies: []rules.Policy{{Algorithm: "token_bucket", Rate: "1/h", Burst: 1}},
	}}})
	var ctx fasthttp.RequestCtx
	var req fasthttp.Request
	req.SetRequestURI("http://example.com/")
	req.Header.Add("X-API-Key", "K")
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1}, nil)
	if res, _ := e.Decide(&ctx, fastlimit.Request{Ctx: &ctx}); res.Refused() {
		t.Fatal("first request refused")
	}
	ctx.Request.Header.Add("X-API-Key", "other")
	if res, _ := e.Decide(&ctx, fastlimit.Request{Ctx: &ctx}); !res.Refused() {
		t.Error("a second X-API-Key line opened a new counter for key K")
	}
}

// A refusal carries X-Content-Type-Options: nosniff, as httplimit's does,
// and a request with no peer address is not keyed as 0.0.0.0.
func TestRefusalNosniffAndUnknownPeer(t *testing.T) {
	e := newEngine(t, rules.Config{Rules: []rules.Rule{{
		Name:     "per-ip",
		Policies: []rules.Policy{{Algorithm: "token_bucket", Rate: "1/h", Burst: 1}},
	}}})
	var ctx fasthttp.RequestCtx
	var req fasthttp.Request
	req.SetRequestURI("http://example.com/")
	ctx.Init(&req, nil, nil) // no peer address
	if got := (fastlimit.Request{Ctx: &ctx}).RemoteAddr(); got.IsValid() {
		t.Errorf("unknown peer reported as %v, want the zero AddrPort", got)
	}
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1}, nil)
	e.Decide(&ctx, fastlimit.Request{Ctx: &ctx})
	res, _ := e.Decide(&ctx, fastlimit.Request{Ctx: &ctx})
	if !res.Refused() {
		t.Fatal("second request not refused")
	}
	fastlimit.WriteRefusal(&ctx, &res)
	if v := string(ctx.Response.Header.Peek("X-Content-Type-Options")); v != "nosniff" {
		t.Errorf("X-Content-Type-Options %q, want nosniff", v)
	}
}
