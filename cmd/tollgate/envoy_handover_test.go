package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tollgate-dev/tollgate/internal/envoyratelimit"
	"github.com/tollgate-dev/tollgate/internal/redistest"
)

const handoverConfig = `domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: hour, requests_per_unit: 5}
  - key: user
    descriptors:
      - key: plan
        value: pro
        rate_limit: {unit: hour, requests_per_unit: 10}
`

// A tollgate envoy-rls replacing a running envoyproxy/ratelimit, with the
// same environment and configuration directory, on the same Redis,
// carries its counts on; and an edited limit keeps its count.
func TestEnvoyRLSCarriesOnEnvoyproxyRatelimitsCounts(t *testing.T) {
	if left := 3600 - time.Now().Unix()%3600; left < 60 {
		t.Skipf("%ds to the hour: the windows would roll during the test", left)
	}
	srv := redistest.Start(t)
	root := t.TempDir()
	dir := filepath.Join(root, "rl", "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "edge.yaml")
	if err := os.WriteFile(file, []byte(handoverConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"REDIS_SOCKET_TYPE=tcp", "REDIS_URL=" + srv.Addr, "RUNTIME_ROOT=" + root, "RUNTIME_SUBDIRECTORY=rl"}
	addr := desc2("remote_address", "203.0.113.9")
	plan := &rlv3.RateLimitDescriptor{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "user", Value: "u7"}, {Key: "plan", Value: "pro"}}, HitsAddend: wrapperspb.UInt64(4)}

	upstream := envoyratelimit.Start(t, env...)
	for range 3 {
		askRLS(t, upstream.GRPC, addr)
	}
	askRLS(t, upstream.GRPC, plan)
	upstream.Stop()

	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	grpcAddr := freeAddr(t)
	startEnvoyRLS(t, "-grpc", grpcAddr, "-http", "off", "-debug", "off")
	type want struct {
		code      rlsv3.RateLimitResponse_Code
		remaining uint32
	}
	check := func(what string, d *rlv3.RateLimitDescriptor, w want) {
		t.Helper()
		st := askRLS(t, grpcAddr, d).GetStatuses()[0]
		if st.GetCode() != w.code || st.GetLimitRemaining() != w.remaining {
			t.Errorf("%s: %v remaining %d, want %v remaining %d", what, st.GetCode(), st.GetLimitRemaining(), w.code, w.remaining)
		}
	}
	check("4th hit of 5", addr, want{rlsv3.RateLimitResponse_OK, 1})
	check("5th hit of 5", addr, want{rlsv3.RateLimitResponse_OK, 0})
	check("6th hit of 5", addr, want{rlsv3.RateLimitResponse_OVER_LIMIT, 0})
	plan.HitsAddend = wrapperspb.UInt64(1)
	check("5 hits of 10 on two entries", plan, want{rlsv3.RateLimitResponse_OK, 5})

	// Raise the limit to 20: the 6 hits stay counted.
	if err := os.WriteFile(file, []byte(strings.Replace(handoverConfig, "requests_per_unit: 5}", "requests_per_unit: 20}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	peek := desc2("remote_address", "203.0.113.9")
	peek.HitsAddend = wrapperspb.UInt64(0)
	deadline := time.Now().Add(15 * time.Second)
	for askRLS(t, grpcAddr, peek).GetStatuses()[0].GetCurrentLimit().GetRequestsPerUnit() != 20 {
		if time.Now().After(deadline) {
			t.Fatal("the edited limit was not loaded within 15s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	check("7th hit under the edited limit of 20", addr, want{rlsv3.RateLimitResponse_OK, 13})
}

func desc2(k, v string) *rlv3.RateLimitDescriptor {
	return &rlv3.RateLimitDescriptor{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: k, Value: v}}}
}

// askRLS sends one request of domain edge with d to the service at addr,
// waiting for its listener.
func askRLS(t *testing.T, addr string, d *rlv3.RateLimitDescriptor) *rlsv3.RateLimitResponse {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{d}}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
