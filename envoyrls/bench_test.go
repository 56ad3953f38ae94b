package envoyrls

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/store/redis"
)

// benchConfig is bench/rlsload's domain: three limits no load reaches.
const benchConfig = `
domain: bench
descriptors:
  - key: remote_address
    rate_limit: {unit: hour, requests_per_unit: 4000000000}
  - key: path
    rate_limit: {unit: hour, requests_per_unit: 4000000000}
  - key: user
    descriptors:
      - key: plan
        value: pro
        rate_limit: {unit: hour, requests_per_unit: 4000000000}
`

// benchRequests are 1024 requests of n descriptors, as bench/rlsload
// sends them.
func benchRequests(n int) []*rlsv3.RateLimitRequest {
	out := make([]*rlsv3.RateLimitRequest, 1024)
	for i := range out {
		ip := fmt.Sprintf("10.0.%d.%d", i>>8, i&255)
		all := []*rlv3.RateLimitDescriptor{
			desc("remote_address", ip),
			desc("path", "/api/v1/items/"+strconv.Itoa(i%16)),
			desc("user", "u"+strconv.Itoa(i), "plan", "pro"),
		}
		out[i] = &rlsv3.RateLimitRequest{Domain: "bench", Descriptors: all[:n]}
	}
	return out
}

func benchService(b *testing.B, st limit.Store) *Service {
	svc, err := New(Config{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	svc.SetLimits(mustBuild(b, Source{Name: "bench.yaml", Data: []byte(benchConfig)}))
	return svc
}

// BenchmarkShouldRateLimit is the handler's cost per request, without
// gRPC, on the memory store and on a real redis-server (callers in
// parallel, so that the Redis store pipelines them).
func BenchmarkShouldRateLimit(b *testing.B) {
	mem, err := memory.New(memory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer mem.Close()
	srv := redistest.Start(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := redis.New(ctx, redis.Config{Addrs: []string{srv.Addr}, Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer rs.Close()
	for _, st := range []struct {
		name  string
		store limit.Store
	}{{"memory", mem}, {"redis", rs}} {
		svc := benchService(b, st.store)
		for _, n := range []int{1, 3} {
			reqs := benchRequests(n)
			b.Run(fmt.Sprintf("%s/descriptors=%d", st.name, n), func(b *testing.B) {
				b.ReportAllocs()
				var next atomic.Uint64
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						resp, err := svc.ShouldRateLimit(context.Background(), reqs[next.Add(1)%uint64(len(reqs))])
						if err != nil || resp.GetOverallCode() != rlsv3.RateLimitResponse_OK {
							b.Errorf("%v %v", resp, err)
							return
						}
					}
				})
			})
		}
	}
}
