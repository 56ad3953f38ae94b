package envoyrls

import (
	"context"
	"fmt"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/tollgate-dev/tollgate/store/redis"
)

// The counting knobs answer as envoyproxy/ratelimit's do, request by
// request, against the real binary (ENVOY_RATELIMIT_BIN), each on its
// own redis-server: STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT (only the
// descriptors going over are incremented), LOCAL_CACHE_SIZE_IN_BYTES
// (an over-limit key answered from memory, uncounted, even after its
// Redis key was deleted), and refused hits counted by default.
func TestCountingKnobsParity(t *testing.T) {
	client := func(ip string) *rlv3.RateLimitDescriptor { return desc("remote_address", ip) }
	seq := []*rlsv3.RateLimitRequest{
		{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{client("10.1.0.1"), desc("path", "/api")}},
		{Domain: "edge", HitsAddend: 2, Descriptors: []*rlv3.RateLimitDescriptor{client("10.1.0.1"), desc("path", "/api")}},
		{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{client("10.1.0.1"), desc("path", "/api")}},
		{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{desc("path", "/api")}},
		{Domain: "edge", HitsAddend: 5, Descriptors: []*rlv3.RateLimitDescriptor{client("10.1.0.2")}},
		{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{client("10.1.0.2"), desc("path", "/api")}},
		{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{desc("path", "/api"), desc("trial", "t")}},
		{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{desc("trial", "t"), desc("path", "/api")}},
		{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{desc("path", "/api")}},
		nil, // FLUSHALL on both: an operator deleting the keys
		{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{client("10.1.0.1")}},
		{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{client("10.1.0.2"), desc("path", "/api")}},
	}
	for _, c := range []struct {
		name string
		env  []string
		cfg  Charging
	}{
		{"defaults", nil, Charging{}},
		{"stop increment", []string{"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true"}, Charging{StopIncrementWhenOverLimit: true}},
		{"local cache", []string{"LOCAL_CACHE_SIZE_IN_BYTES=1048576"}, Charging{LocalCacheBytes: 1 << 20}},
		{"both", []string{"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true", "LOCAL_CACHE_SIZE_IN_BYTES=1048576"}, Charging{StopIncrementWhenOverLimit: true, LocalCacheBytes: 1 << 20}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := startParity(t, Config{Charging: c.cfg}, redis.Config{}, c.env...)
			svc, theirs, upRedis, ourRedis := p.ours, p.theirs, p.upRedis, p.ourRedis
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if s := time.Now().Second(); s > 55 { // one minute's window for the whole sequence
				time.Sleep(time.Duration(61-s) * time.Second)
			}
			for i, req := range seq {
				if req == nil {
					upRedis.CLI(t, "FLUSHALL")
					ourRedis.CLI(t, "FLUSHALL")
					continue
				}
				a, err := theirs.ShouldRateLimit(ctx, req)
				if err != nil {
					t.Fatalf("request %d: envoyproxy/ratelimit: %v", i, err)
				}
				b, err := svc.ShouldRateLimit(ctx, req)
				if err != nil {
					t.Fatalf("request %d: tollgate: %v", i, err)
				}
				if sa, sb := countSummary(a), countSummary(b); sa != sb {
					t.Errorf("request %d differs:\n  envoyproxy/ratelimit %s\n  tollgate             %s", i, sa, sb)
				}
			}
		})
	}
}

// countSummary is what counting decides in a response: the codes and
// each status's limit and remaining.
func countSummary(r *rlsv3.RateLimitResponse) string {
	out := r.GetOverallCode().String()
	for _, s := range r.GetStatuses() {
		out += fmt.Sprintf(" [%v %d/%v %d]", s.GetCode(), s.GetCurrentLimit().GetRequestsPerUnit(), s.GetCurrentLimit().GetUnit(), s.GetLimitRemaining())
	}
	return out
}
