package gateway

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/tollgate-dev/tollgate/client"
	"github.com/tollgate-dev/tollgate/client/grpcretry"
	"github.com/tollgate-dev/tollgate/gateway/observe"
)

// grpcUpstream serves grpc-go's health service (unary Check, streaming
// Watch) on loopback, h2c.
func grpcUpstream(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("svc", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

// The gRPC route: 1 call per second per tenant and method (a token bucket,
// so that two calls in a row are refused wherever they fall in a second,
// unlike a fixed window whose boundary they may straddle). Keys come from
// the method and from metadata.
const grpcRules = `rules:
  - name: grpc-tenant
    key: [grpc_method, header:X-Tenant]
    match: {path_prefixes: [/grpc.health.v1.Health/]}
    policies: [{name: one-per-second, algorithm: token_bucket, rate: 1/s, burst: 1}]
`

func grpcDial(t *testing.T, addr string, opts ...grpc.DialOption) healthpb.HealthClient {
	conn, err := grpc.NewClient(addr, append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return healthpb.NewHealthClient(conn)
}

func tenant(ctx context.Context, name string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "x-tenant", name)
}

// A gRPC client and server through the gateway: unary and streaming
// calls pass; the call over the limit is refused with RESOURCE_EXHAUSTED
// and its retry-after and RateLimit metadata, never an HTTP 429.
func TestGRPCThroughGatewayRefusedWithResourceExhausted(t *testing.T) {
	up := grpcUpstream(t)
	g, base := startH2Gateway(t, false, grpcRules+`routes:
  - {path: /, upstream: "http://`+up+`", grpc: true}
`)
	hc := grpcDial(t, strings.TrimPrefix(base, "http://"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var hdr metadata.MD
	resp, err := hc.Check(tenant(ctx, "a"), &healthpb.HealthCheckRequest{Service: "svc"}, grpc.Header(&hdr))
	if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first call: %v %v", resp, err)
	}
	if rl := hdr.Get("ratelimit"); len(rl) != 1 || !strings.Contains(rl[0], "one-per-second") {
		t.Errorf("allowed call's RateLimit metadata: %q", rl)
	}
	var trl metadata.MD
	_, err = hc.Check(tenant(ctx, "a"), &healthpb.HealthCheckRequest{Service: "svc"}, grpc.Trailer(&trl))
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), "retry after 1s") {
		t.Fatalf("second call: %v, want RESOURCE_EXHAUSTED", err)
	}
	if ra := trl.Get("retry-after"); len(ra) != 1 || ra[0] != "1" {
		t.Errorf("refusal's retry-after: %q (metadata %v)", ra, trl)
	}
	if rl := trl.Get("ratelimit"); len(rl) != 1 || !strings.Contains(rl[0], "r=0") {
		t.Errorf("refusal's RateLimit: %q", rl)
	}
	// Another tenant has its own counter; a stream is limited as a call.
	if _, err := hc.Check(tenant(ctx, "b"), &healthpb.HealthCheckRequest{Service: "svc"}); err != nil {
		t.Fatalf("tenant b: %v", err)
	}
	w, err := hc.Watch(tenant(ctx, "c"), &healthpb.HealthCheckRequest{Service: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := w.Recv(); err != nil || m.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("stream: %v %v", m, err)
	}
	w2, err := hc.Watch(tenant(ctx, "c"), &healthpb.HealthCheckRequest{Service: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w2.Recv(); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("second stream: %v, want RESOURCE_EXHAUSTED", err)
	}
	if n := testGRPCCount(g); n < 4 {
		t.Errorf("grpc requests counted: %v", n)
	}
}

func testGRPCCount(g *Gateway) float64 {
	mfs, _ := g.core.M.Reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "tollgate_requests_by_protocol_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == observe.ProtoGRPC {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// The interceptors wait as the refusal says (retry-after: 1) and retry:
// the refused unary call and the refused stream both succeed.
func TestGRPCRetryInterceptorWaitsForTheServer(t *testing.T) {
	up := grpcUpstream(t)
	_, base := startH2Gateway(t, false, grpcRules+`routes:
  - {path: /, upstream: "http://`+up+`", grpc: true}
`)
	cfg := client.Config{MaxAttempts: 3, RetryJitter: -1}
	hc := grpcDial(t, strings.TrimPrefix(base, "http://"),
		grpc.WithUnaryInterceptor(grpcretry.Unary(cfg)), grpc.WithStreamInterceptor(grpcretry.Stream(cfg)))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ctx = tenant(ctx, "a")
	if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "svc"}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "svc"}); err != nil {
		t.Fatalf("retried call: %v", err)
	}
	// The bucket refills one call a second: the retry went after the
	// server's delay, well within the bound.
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("retried call took %v", d)
	}
	w, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{Service: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := w.Recv(); err != nil || m.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("retried stream: %v %v", m, err)
	}
	w2, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{Service: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	if m, err := w2.Recv(); err != nil || m.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("retried stream: %v %v", m, err)
	}
	if d := time.Since(t1); d < 50*time.Millisecond {
		t.Errorf("the refused stream was retried after %v: it did not wait", d)
	}
}

// A gRPC route takes gRPC only: another content type is answered 415, an
// HTTP/1.1 request 505, and neither reaches the upstream.
func TestGRPCRouteRefusesWhatIsNotGRPC(t *testing.T) {
	hits := 0
	up := h2cUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	_, base := startH2Gateway(t, false, `routes:
  - {path: /, upstream: "`+up+`", grpc: true}
`)
	req, _ := http.NewRequest("POST", base+"/pkg.Svc/Method", strings.NewReader("x"))
	req.Header.Set("Content-Type", "application/json")
	resp, err := h2cClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 415 {
		t.Errorf("bad content type: %d, want 415", resp.StatusCode)
	}
	req, _ = http.NewRequest("POST", base+"/pkg.Svc/Method", strings.NewReader("x"))
	req.Header.Set("Content-Type", "application/grpc")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 505 {
		t.Errorf("HTTP/1.1: %d, want 505", resp.StatusCode)
	}
	if hits != 0 {
		t.Errorf("%d requests reached the upstream", hits)
	}
}

// On the wire, a gRPC refusal is HTTP 200 with the gRPC status in its
// only HEADERS frame (trailers-only), never a 429.
func TestGRPCRefusalOnTheWire(t *testing.T) {
	_, base := startH2Gateway(t, false, `rules:
  - {name: none, policies: [{name: zero, algorithm: fixed_window, limit: 1, window: 1h}]}
routes:
  - {path: /, upstream: "http://127.0.0.1:9", grpc: true}
`)
	for i, want := range []string{"14", "8"} { // the first passes and finds no upstream
		req, _ := http.NewRequest("POST", base+"/pkg.Svc/Method", strings.NewReader("\x00\x00\x00\x00\x00"))
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("Te", "trailers")
		resp, err := h2cClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if resp.StatusCode != 200 || h.Get("Content-Type") != "application/grpc" || h.Get("Grpc-Status") != want {
			t.Errorf("request %d: %d %v, want 200 with grpc-status %s", i, resp.StatusCode, h, want)
		}
		if want == "8" && (h.Get("Retry-After") == "" || h.Get("Ratelimit") == "" || !strings.HasPrefix(h.Get("Grpc-Message"), "rate limit exceeded; retry after ")) {
			t.Errorf("refusal's metadata: %v", h)
		}
	}
}
