package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// An upstream's trailers-only answer (a unary call's error: grpc-status
// among the header fields, the stream ended on them) reaches the client
// as it was sent, every time. The proxy used to flush the header on a
// timer of its own, racing the handler's end: about one call in twenty
// then read a stream closed without trailers (Internal) in place of the
// upstream's NOT_FOUND.
func TestGRPCTrailersOnlyAnswerPassesWhole(t *testing.T) {
	up := grpcUpstream(t)
	_, base := startH2Gateway(t, false, `rules:
  - name: plain
    policies: [{algorithm: token_bucket, rate: 100000/h, burst: 100000}]
routes:
  - {path: /, upstream: "http://`+up+`", grpc: true}
`)
	hc := grpcDial(t, strings.TrimPrefix(base, "http://"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 300 {
		_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "nope"})
		if st := status.Convert(err); st.Code() != codes.NotFound || st.Message() != "unknown service" {
			t.Fatalf("call %d: %v; want the upstream's NOT_FOUND, unknown service", i+1, err)
		}
	}
}
