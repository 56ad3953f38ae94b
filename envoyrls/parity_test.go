package envoyrls

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/envoyratelimit"
	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/store/redis"
)

// TestParityWithEnvoyproxyRatelimit sends one request sequence to the
// real envoyproxy/ratelimit and to this package, each on a redis-server, and
// compares every overall_code and status (code, current_limit,
// limit_remaining). The binary is envoyproxy/ratelimit's service_cmd,
// named by ENVOY_RATELIMIT_BIN: scripts/test.sh builds the version the
// bench module pins as a tool (cd bench && go build
// github.com/envoyproxy/ratelimit/src/service_cmd); without it the test
// is skipped. No difference is expected (a refused request is counted
// by both).
func TestParityWithEnvoyproxyRatelimit(t *testing.T) {
	p := startParity(t, Config{}, redis.Config{OnFailure: failmode.Closed})
	ours, _ := startGRPC(t, p.ours)
	theirs := p.theirs
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	five := desc("remote_address", "10.0.0.3")
	five.HitsAddend = wrapperspb.UInt64(5)
	peek := desc("path", "/api")
	peek.HitsAddend = wrapperspb.UInt64(0)
	client1, api := desc("remote_address", "10.0.0.1"), desc("path", "/api")
	refund := desc("remote_address", "10.0.0.4")
	refund.HitsAddend, refund.IsNegativeHits = wrapperspb.UInt64(2), true
	seq := []*rlsv3.RateLimitRequest{
		{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{client1, api}},
		{Domain: "edge", HitsAddend: 2, Descriptors: []*rlv3.RateLimitDescriptor{client1, api}},
		{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{client1, api}},
		{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{desc("remote_address", "10.0.0.2")}},
		{Domain: "edge", HitsAddend: 1, Descriptors: []*rlv3.RateLimitDescriptor{peek, five}},
		{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{desc("remote_address", "10.0.0.3")}}, // refused: 5 hits were counted
		{Domain: "nope", Descriptors: []*rlv3.RateLimitDescriptor{client1}},
		{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{{}, desc("header", "x"), desc("path", "/other")}},
		{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{desc("generic_key", "exempt")}},
		{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{desc("trial", "t")}},
		{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{desc("trial", "t")}},
		// is_negative_hits: the pinned envoyproxy/ratelimit does not read
		// it, and charges the hits as any others.
		{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{refund}},
		{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{refund}},
	}
	// Stay clear of a minute boundary: the sequence must fall in one window.
	if s := time.Now().Second(); s > 50 {
		time.Sleep(time.Duration(61-s) * time.Second)
	}
	var differ []int
	for i, req := range seq {
		a, err := theirs.ShouldRateLimit(ctx, req)
		if err != nil {
			t.Fatalf("request %d: envoyproxy/ratelimit: %v", i, err)
		}
		b, err := ours.ShouldRateLimit(ctx, req)
		if err != nil {
			t.Fatalf("request %d: tollgate: %v", i, err)
		}
		if sa, sb := countSummary(a), countSummary(b); sa != sb {
			t.Logf("request %d differs:\n  envoyproxy/ratelimit %s\n  tollgate             %s", i, sa, sb)
			differ = append(differ, i)
		}
	}
	if len(differ) != 0 {
		t.Fatalf("requests differing: %v, want none", differ)
	}
}

// parity is envoyproxy/ratelimit and tollgate's Service, both on
// e2eConfig, each counting in a redis-server of its own under the same
// keys.
type parity struct {
	theirs            rlsv3.RateLimitServiceClient
	ours              *Service
	upRedis, ourRedis *redistest.Server
}

// startParity starts the pair: envoyproxy/ratelimit with env added to
// its environment (the test is skipped without ENVOY_RATELIMIT_BIN), and
// the Service with cfg on a Redis store configured as rc (its address
// and a 2s timeout set here).
func startParity(t *testing.T, cfg Config, rc redis.Config, env ...string) parity {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "rl", "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "edge.yaml"), e2eConfig)
	p := parity{upRedis: redistest.Start(t), ourRedis: redistest.Start(t)}
	up := envoyratelimit.Start(t, append([]string{"REDIS_SOCKET_TYPE=tcp", "REDIS_URL=" + p.upRedis.Addr, "RUNTIME_ROOT=" + root, "RUNTIME_SUBDIRECTORY=rl"}, env...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc.Addrs, rc.Timeout = []string{p.ourRedis.Addr}, 2*time.Second
	st, err := redis.New(ctx, rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg.Store = st
	if p.ours, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	p.ours.SetLimits(mustBuild(t, Source{Name: "edge.yaml", Data: []byte(e2eConfig)}))
	p.theirs = rlsv3.NewRateLimitServiceClient(dialGRPC(t, up.GRPC))
	return p
}
