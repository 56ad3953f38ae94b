package gateway

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// deadUpstream is an address nothing listens on.
func deadUpstream(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// An upstream that cannot be reached is charged as what the gateway
// answers, 502, on both data paths: a rule counting 5xx refuses the
// third request at once (not proxied, no second 502).
func TestCountingChargesTheGatewaysOwnAnswer(t *testing.T) {
	for _, h2 := range []string{"off", "on"} {
		t.Run("http2 "+h2, func(t *testing.T) {
			g := newTestGateway(t, `listen: {addr: "127.0.0.1:0", http2: `+h2+`}
admin: {addr: "127.0.0.1:0"}
reload: {watch: false}
routes: [{path: /, upstream: "`+deadUpstream(t)+`"}]
rules: [{name: upstream-errors, count: {statuses: ["5xx"]}, policies: [{algorithm: token_bucket, rate: 2/h, burst: 2}]}]
`)
			if err := g.Start(); err != nil {
				t.Fatal(err)
			}
			base := "http://" + g.Addr().String()
			var codes []int
			for range 4 {
				code, _, _ := get(t, base+"/", "")
				codes = append(codes, code)
			}
			if got := fmtInts(codes); got != "[502 502 429 429]" {
				t.Fatalf("answers %s; want two 502s charged, then refused", got)
			}
			if v := metricValue(g, "tollgate_counted_total", "rule", "upstream-errors"); v != 2 {
				t.Errorf("tollgate_counted_total = %v; want 2", v)
			}
		})
	}
}

// An upstream that does not answer in time is charged as 504, what the
// gateway answers, on both data paths: a rule counting only 504 refuses
// the third request.
func TestCountingChargesATimeoutAs504(t *testing.T) {
	slow := h1Upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	}))
	for _, h2 := range []string{"off", "on"} {
		t.Run("http2 "+h2, func(t *testing.T) {
			g := newTestGateway(t, `listen: {addr: "127.0.0.1:0", http2: `+h2+`}
admin: {addr: "127.0.0.1:0"}
reload: {watch: false}
upstream: {response_timeout: 50ms}
routes: [{path: /, upstream: "`+slow+`"}]
rules: [{name: timeouts, count: {statuses: ["504"]}, policies: [{algorithm: token_bucket, rate: 2/h, burst: 2}]}]
`)
			if err := g.Start(); err != nil {
				t.Fatal(err)
			}
			var codes []int
			for range 3 {
				code, _, _ := get(t, "http://"+g.Addr().String()+"/", "")
				codes = append(codes, code)
			}
			if got := fmtInts(codes); got != "[504 504 429]" {
				t.Fatalf("answers %s; want two 504s charged, then refused", got)
			}
		})
	}
}

// A websocket upgrade is charged as 101 (on the HTTP/1.1 path, which
// tunnels): a rule counting 101 lets one tunnel a key, then refuses.
func TestCountingChargesAWebsocketAs101(t *testing.T) {
	origin, _ := upgradeOrigin(t, wsSwitching, "")
	g, _ := startTestGateway(t, "routes: [{path: /, upstream: \""+origin+"\"}]\n"+
		"rules: [{name: tunnels, count: {statuses: [\"101\"]}, policies: [{algorithm: token_bucket, rate: 1/h, burst: 1}]}]\n")
	defer g.Close()
	var codes []int
	for range 2 {
		c, br := dialRaw(t, g.Addr().String(), "GET /ws HTTP/1.1\r\n"+wsRequest+"\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		codes = append(codes, resp.StatusCode)
		c.Close()
	}
	if got := fmtInts(codes); got != "[101 429]" {
		t.Fatalf("upgrades answered %s; want the first tunnelled and charged, the second refused", got)
	}
}

// On a gRPC route the answer's fields are counted: a trailers-only
// NOT_FOUND (grpc-status 5 among the header fields) is charged by a rule
// counting it; the calls that succeed never are.
func TestCountingGRPCStatus(t *testing.T) {
	up := grpcUpstream(t)
	_, base := startH2Gateway(t, false, `rules:
  - name: not-found
    match: {path_prefixes: [/grpc.health.v1.Health/]}
    count: {header: {name: Grpc-Status, value: "5"}}
    policies: [{algorithm: token_bucket, rate: 2/h, burst: 2}]
routes:
  - {path: /, upstream: "http://`+up+`", grpc: true}
`)
	hc := grpcDial(t, strings.TrimPrefix(base, "http://"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 4 {
		if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "svc"}); err != nil {
			t.Fatalf("call %d for a known service: %v; want OK, never charged", i+1, err)
		}
	}
	var got []codes.Code
	var msgs []string
	for range 4 {
		_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "nope"})
		got = append(got, status.Code(err))
		msgs = append(msgs, status.Convert(err).Message())
	}
	want := []codes.Code{codes.NotFound, codes.NotFound, codes.ResourceExhausted, codes.ResourceExhausted}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("calls for an unknown service: %v %q; want %v", got, msgs, want)
		}
	}
}
