package envoyrls

import (
	"context"
	"math"
	"net"
	"sync/atomic"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/store/redis"
)

// e2eConfig is what an Envoy edge typically limits: by client address,
// by path, a generic key exempted, and one limit being tried in shadow.
const e2eConfig = `
domain: edge
descriptors:
  - key: remote_address
    rate_limit:
      unit: minute
      requests_per_unit: 3
  - key: path
    value: /api
    rate_limit:
      unit: minute
      requests_per_unit: 10
  - key: generic_key
    value: exempt
    rate_limit:
      unlimited: true
  - key: trial
    shadow_mode: true
    rate_limit:
      unit: minute
      requests_per_unit: 1
`

// e2eStart is a minute boundary plus 10s: every request of the test
// falls in one window whatever the store.
var e2eStart = time.Date(2026, 12, 1, 12, 0, 10, 0, time.UTC)

// startGRPC serves svc on a loopback port and returns a client of it.
func startGRPC(t *testing.T, svc *Service) (rlsv3.RateLimitServiceClient, *grpc.ClientConn) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	svc.Register(g)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	conn := dialGRPC(t, lis.Addr().String())
	return rlsv3.NewRateLimitServiceClient(conn), conn
}

// dialGRPC is a plaintext client of addr, closed when the test ends.
func dialGRPC(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func desc(kv ...string) *rlv3.RateLimitDescriptor {
	return &rlv3.RateLimitDescriptor{Entries: entries(kv...)}
}

// runE2E sends what Envoy's ratelimit filter sends to a service deciding
// with st, whose clock reads now.
func runE2E(t *testing.T, st limit.Store, now *atomic.Int64) {
	svc, err := New(Config{Store: st, Headers: HeadersDraft10, Now: func() time.Time { return time.Unix(0, now.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	svc.SetLimits(mustBuild(t, Source{Name: "edge.yaml", Data: []byte(e2eConfig)}))
	client, conn := startGRPC(t, svc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	call := func(req *rlsv3.RateLimitRequest) *rlsv3.RateLimitResponse {
		t.Helper()
		resp, err := client.ShouldRateLimit(ctx, req)
		if err != nil {
			t.Fatalf("ShouldRateLimit: %v", err)
		}
		return resp
	}
	type want struct {
		code      rlsv3.RateLimitResponse_Code
		remaining uint32
		limited   bool
	}
	reset := 50 * time.Second
	check := func(resp *rlsv3.RateLimitResponse, overall rlsv3.RateLimitResponse_Code, ws ...want) {
		t.Helper()
		if resp.GetOverallCode() != overall {
			t.Errorf("overall %v, want %v", resp.GetOverallCode(), overall)
		}
		if len(resp.GetStatuses()) != len(ws) {
			t.Fatalf("%d statuses, want %d", len(resp.GetStatuses()), len(ws))
		}
		for i, w := range ws {
			s := resp.GetStatuses()[i]
			if s.GetCode() != w.code || s.GetLimitRemaining() != w.remaining || (s.GetCurrentLimit() != nil) != w.limited {
				t.Errorf("status %d: %v remaining %d limit %v, want %v remaining %d limited %v",
					i, s.GetCode(), s.GetLimitRemaining(), s.GetCurrentLimit(), w.code, w.remaining, w.limited)
			}
			if w.limited {
				if r := s.GetDurationUntilReset().AsDuration(); r != reset {
					t.Errorf("status %d: duration_until_reset %v, want %v", i, r, reset)
				}
			}
		}
	}
	OK, OVER := rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OVER_LIMIT
	client1 := desc("remote_address", "10.0.0.1")
	api := desc("path", "/api")

	// Two descriptors, one hit each.
	resp := call(&rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{client1, api}})
	check(resp, OK, want{OK, 2, true}, want{OK, 9, true})
	if h := resp.GetResponseHeadersToAdd(); len(h) != 2 || h[0].GetKey() != "RateLimit-Policy" ||
		h[0].GetValue() != `"remote_address";q=3;w=60, "path_/api";q=10;w=60` ||
		h[1].GetValue() != `"remote_address";r=2;t=50, "path_/api";r=9;t=50` {
		t.Errorf("headers %v", h)
	}
	// hits_addend for the whole request.
	check(call(&rlsv3.RateLimitRequest{Domain: "edge", HitsAddend: 2, Descriptors: []*rlv3.RateLimitDescriptor{client1, api}}),
		OK, want{OK, 0, true}, want{OK, 7, true})
	// Over on the client: each descriptor is charged on its own, so the
	// path still counts the hit.
	check(call(&rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{client1, api}}),
		OVER, want{OVER, 0, true}, want{OK, 6, true})
	// Another client is counted apart.
	check(call(&rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{desc("remote_address", "10.0.0.2")}}),
		OK, want{OK, 2, true})
	// A per-descriptor hits_addend wins over the request's; zero only looks.
	peek := desc("path", "/api")
	peek.HitsAddend = wrapperspb.UInt64(0)
	five := desc("remote_address", "10.0.0.3")
	five.HitsAddend = wrapperspb.UInt64(5)
	check(call(&rlsv3.RateLimitRequest{Domain: "edge", HitsAddend: 1, Descriptors: []*rlv3.RateLimitDescriptor{peek, five}}),
		OVER, want{OK, 6, true}, want{OVER, 0, true})
	// Unknown domain, an empty descriptor, descriptors matching nothing:
	// OK with no limit.
	check(call(&rlsv3.RateLimitRequest{Domain: "nope", Descriptors: []*rlv3.RateLimitDescriptor{client1}}), OK, want{OK, 0, false})
	check(call(&rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{{}, desc("header", "x"), desc("path", "/other")}}),
		OK, want{OK, 0, false}, want{OK, 0, false}, want{OK, 0, false})
	// Unlimited.
	check(call(&rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{desc("generic_key", "exempt")}}),
		OK, want{OK, math.MaxUint32, false})
	// Shadow mode: over the limit, answered OK.
	trial := desc("trial", "t")
	check(call(&rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{trial}}), OK, want{OK, 0, true})
	check(call(&rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{trial}}), OK, want{OK, 0, true})
	// The next window starts afresh.
	now.Add(int64(50 * time.Second))
	reset = time.Minute
	check(call(&rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{client1}}), OK, want{OK, 2, true})

	// Empty domain and no descriptors are refused.
	for _, req := range []*rlsv3.RateLimitRequest{{Descriptors: []*rlv3.RateLimitDescriptor{client1}}, {Domain: "edge"}} {
		if _, err := client.ShouldRateLimit(ctx, req); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%v: %v, want InvalidArgument", req, err)
		}
	}
	// Health checking.
	h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: HealthService})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health: %v %v", h, err)
	}
	svc.SetServing(false)
	h, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: HealthService})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health after SetServing(false): %v %v", h, err)
	}
}

func TestEnvoyFilterRequestsOverGRPCWithMemory(t *testing.T) {
	var now atomic.Int64
	now.Store(e2eStart.UnixNano())
	st, err := memory.New(memory.Config{Clock: now.Load, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runE2E(t, st, &now)
}

func TestEnvoyFilterRequestsOverGRPCWithRedis(t *testing.T) {
	srv := redistest.Start(t)
	var now atomic.Int64
	now.Store(e2eStart.UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := redis.New(ctx, redis.Config{Addrs: []string{srv.Addr}, Clock: now.Load, Timeout: 2 * time.Second, OnFailure: failmode.Closed})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runE2E(t, st, &now)
}
