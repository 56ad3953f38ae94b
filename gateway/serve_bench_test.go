package gateway

import (
	"bufio"
	"io"
	"net"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/internal/racebuild"
)

// newTestGateway builds a gateway (not started) from YAML.
func newTestGateway(tb testing.TB, yaml string) *Gateway {
	tb.Helper()
	cfg, err := config.Parse("test.yaml", []byte(yaml))
	if err != nil {
		tb.Fatal(err)
	}
	g, err := New(cfg, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { g.Close() })
	return g
}

const demoRoute = "routes: [{path: /, upstream: demo}]\n"

const neverRefuse = "rules: [{name: per-ip, policies: [{rate: 1000000/s, burst: 1000}]}]\n"

const alwaysRefuse = "rules: [{name: per-ip, policies: [{rate: 1/h, burst: 1}]}]\n"

// The counting rules: refusing at once (1/h, the one request used up
// by the first answer, which it counts), never counting the demo's 200,
// and charging every 2xx.
const (
	countingRefuse     = "rules: [{name: per-ip, count: {statuses: [\"2xx\"]}, policies: [{rate: 1/h, burst: 1}]}]\n"
	countingNotCounted = "rules: [{name: per-ip, count: {statuses: [\"401\"]}, policies: [{rate: 1000000/s, burst: 1000}]}]\n"
	countingCharged    = "rules: [{name: per-ip, count: {statuses: [\"2xx\"]}, policies: [{rate: 1000000/s, burst: 1000}]}]\n"
)

func serveOnce(g *Gateway, ctx *fasthttp.RequestCtx, req *fasthttp.Request, addr net.Addr) {
	ctx.Init(req, addr, nil)
	g.fast.Serve(ctx)
}

func benchServe(b *testing.B, yaml string) {
	g := newTestGateway(b, yaml)
	var req fasthttp.Request
	req.SetRequestURI("http://example.com/items/42")
	addr := &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 5555}
	var ctx fasthttp.RequestCtx
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		serveOnce(g, &ctx, &req, addr)
	}
}

// The gateway's own cost per request on the demo origin, without and with
// a never-refusing rule: the difference is the limiting overhead.
func BenchmarkServeNoRule(b *testing.B)    { benchServe(b, demoRoute) }
func BenchmarkServeRuleAllow(b *testing.B) { benchServe(b, demoRoute+neverRefuse) }
func BenchmarkServeRuleDeny(b *testing.B)  { benchServe(b, demoRoute+alwaysRefuse) }

// BenchmarkServeCountingDeny is BenchmarkServeRuleDeny's rule counting
// on the answer: a refusal peeks where the other charges, and nothing
// happens after it.
func BenchmarkServeCountingDeny(b *testing.B) { benchServe(b, demoRoute+countingRefuse) }

// The gateway's own path allocates nothing per request, with or without
// a rule, allowed or refused (the rate-limit header values and the
// refusal body are written into stack buffers that fasthttp copies).
func TestServeAllocations(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	for _, tc := range []struct {
		name string
		yaml string
		want int
	}{{"no rule", demoRoute, 200}, {"rule allows", demoRoute + neverRefuse, 200}, {"rule refuses", demoRoute + alwaysRefuse, 429},
		// A counting rule (count:) costs a refusal nothing more, and its
		// charge after the answer allocates nothing either.
		{"counting rule refuses", demoRoute + countingRefuse, 429},
		{"counting rule, answer not counted", demoRoute + countingNotCounted, 200},
		{"counting rule, answer charged", demoRoute + countingCharged, 200}} {
		g := newTestGateway(t, tc.yaml)
		var req fasthttp.Request
		req.SetRequestURI("http://example.com/items/42")
		var ctx fasthttp.RequestCtx
		ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 5555}, nil)
		g.fast.Serve(&ctx)
		n := testing.AllocsPerRun(200, func() {
			ctx.Response.Reset()
			g.fast.Serve(&ctx)
		})
		if ctx.Response.StatusCode() != tc.want {
			t.Fatalf("%s: status %d", tc.name, ctx.Response.StatusCode())
		}
		if n != 0 {
			t.Errorf("%s: %v allocations per request, want 0", tc.name, n)
		}
	}
}

// benchProxy measures serve on the proxy path against a fasthttp origin
// on loopback answering "ok": the gateway's cost plus two loopback
// exchanges.
func benchProxy(b *testing.B, rules string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	origin := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("ok") }}
	go origin.Serve(ln)
	b.Cleanup(func() { origin.Shutdown() })
	g := newTestGateway(b, "routes: [{path: /, upstream: \"http://"+ln.Addr().String()+"\"}]\n"+rules)
	var req fasthttp.Request
	addr := &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 5555}
	var ctx fasthttp.RequestCtx
	// The response is written out as the server would: reading its
	// streamed body to the end is what returns the upstream connection
	// to the pool.
	out := bufio.NewWriter(io.Discard)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		req.Reset()
		req.SetRequestURI("http://example.com/items/42")
		serveOnce(g, &ctx, &req, addr)
		if ctx.Response.StatusCode() != 200 {
			b.Fatalf("status %d: %s %s", ctx.Response.StatusCode(), ctx.Response.Header.String(), ctx.Response.Body())
		}
		if err := ctx.Response.Write(out); err != nil {
			b.Fatal(err)
		}
		ctx.Response.Reset()
	}
}

// BenchmarkProxyNoRule and BenchmarkProxyRuleAllow are the proxy path's
// cost per request, without and with a never-refusing rule.
func BenchmarkProxyNoRule(b *testing.B)    { benchProxy(b, "") }
func BenchmarkProxyRuleAllow(b *testing.B) { benchProxy(b, neverRefuse) }
