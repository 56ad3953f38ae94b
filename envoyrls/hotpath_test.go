package envoyrls

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate-dev/tollgate/failmode"
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

// benchService decides with st, counting metrics as tollgate envoy-rls
// does.
func benchService(b *testing.B, st limit.Store) *Service {
	m, err := NewMetrics(prometheus.NewRegistry(), 0)
	if err != nil {
		b.Fatal(err)
	}
	svc, err := New(Config{Store: st, Metrics: m})
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

// TestShouldRateLimitAllocs pins the handler's allocations per request
// on the memory store (metrics on, draft-10 headers): the counter keys,
// the response in one block, its two header values. The gRPC layer's own
// are not counted.
func TestShouldRateLimitAllocs(t *testing.T) {
	mem, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	m, err := NewMetrics(prometheus.NewRegistry(), 0)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(Config{Store: mem, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	svc.SetLimits(mustBuild(t, Source{Name: "bench.yaml", Data: []byte(benchConfig)}))
	ctx := context.Background()
	for n, want := range map[int]float64{1: 7, 3: 10} {
		req := benchRequests(n)[0]
		got := testing.AllocsPerRun(200, func() {
			if _, err := svc.ShouldRateLimit(ctx, req); err != nil {
				t.Fatal(err)
			}
		})
		if got > want {
			t.Errorf("%d descriptors: %v allocations per request, want at most %v", n, got, want)
		}
	}
}

// TestDescriptorsShareOneRedisCall: the descriptors of one request are
// counted as envoyproxy/ratelimit counts them, an INCRBY and an EXPIRE
// each, no script, pipelined in one round trip (rueidis's DoMulti).
func TestDescriptorsShareOneRedisCall(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := redis.New(ctx, redis.Config{Addrs: []string{srv.Addr}, Timeout: 2 * time.Second, OnFailure: failmode.Closed})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	svc, err := New(Config{Store: rs})
	if err != nil {
		t.Fatal(err)
	}
	svc.SetLimits(mustBuild(t, Source{Name: "bench.yaml", Data: []byte(benchConfig)}))
	req := benchRequests(3)[0]
	calls := func(cmd string) int {
		for _, line := range strings.Split(srv.CLI(t, "INFO", "commandstats"), "\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
				n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				return n
			}
		}
		return 0
	}
	for range 10 {
		resp, err := svc.ShouldRateLimit(ctx, req)
		if err != nil || len(resp.GetStatuses()) != 3 || resp.GetStatuses()[2].GetLimitRemaining() == 0 {
			t.Fatalf("%v, %v", resp, err)
		}
	}
	for cmd, want := range map[string]int{"incrby": 30, "expire": 30, "evalsha": 0, "eval": 0, "get": 0} {
		if n := calls(cmd); n != want {
			t.Errorf("10 requests of 3 descriptors made %d %s calls, want %d", n, strings.ToUpper(cmd), want)
		}
	}
}
