package gateway

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// gRPC over TLS keyed by ja4: the calls of two connections with one TLS
// configuration share a counter, another configuration's have their own,
// and metadata cannot forge the fingerprint.
func TestGRPCKeyedByJA4(t *testing.T) {
	up := grpcUpstream(t)
	_, base := startH2Gateway(t, true, `rules:
  - name: grpc-stack
    key: [ja4]
    policies: [{algorithm: fixed_window, limit: 2, window: 1h}]
routes:
  - {path: /, upstream: "http://`+up+`", grpc: true}
`)
	addr := strings.TrimPrefix(base, "https://")
	dial := func(tc *tls.Config) healthpb.HealthClient {
		tc.InsecureSkipVerify = true
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tc)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return healthpb.NewHealthClient(conn)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "ja4", "t13d1516h2_8daaf6152771_02713d6af862")
	call := func(hc healthpb.HealthClient) codes.Code {
		_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "svc"})
		return status.Code(err)
	}
	a1, a2 := dial(&tls.Config{}), dial(&tls.Config{})
	b := dial(&tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}})
	for i, s := range []struct {
		hc   healthpb.HealthClient
		want codes.Code
	}{{a1, codes.OK}, {a2, codes.OK}, {a1, codes.ResourceExhausted}, {a2, codes.ResourceExhausted}, {b, codes.OK}} {
		if got := call(s.hc); got != s.want {
			t.Fatalf("call %d: %v, want %v", i+1, got, s.want)
		}
	}
}
