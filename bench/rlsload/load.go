package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// requests returns, for n = 1 to 3, 4096 requests of n descriptors each
// (index n), what Envoy's ratelimit filter sends for a client: its
// address, then the path, then the user and plan. Clients are drawn at
// random among keys; paths among 16.
func requests(keys int) [4][]*rlsv3.RateLimitRequest {
	rng := rand.New(rand.NewPCG(1, 2))
	var out [4][]*rlsv3.RateLimitRequest
	entry := func(k, v string) *rlv3.RateLimitDescriptor_Entry {
		return &rlv3.RateLimitDescriptor_Entry{Key: k, Value: v}
	}
	for n := 1; n <= 3; n++ {
		for range 4096 {
			c := rng.IntN(keys)
			ip := fmt.Sprintf("10.%d.%d.%d", c>>16&255, c>>8&255, c&255)
			all := []*rlv3.RateLimitDescriptor{
				{Entries: []*rlv3.RateLimitDescriptor_Entry{entry("remote_address", ip)}},
				{Entries: []*rlv3.RateLimitDescriptor_Entry{entry("path", "/api/v1/items/"+strconv.Itoa(rng.IntN(16)))}},
				{Entries: []*rlv3.RateLimitDescriptor_Entry{entry("user", "u"+strconv.Itoa(c)), entry("plan", "pro")}},
			}
			out[n] = append(out[n], &rlsv3.RateLimitRequest{Domain: "bench", Descriptors: all[:n]})
		}
	}
	return out
}

// result is one cell's measurement on one server.
type result struct {
	perSec      float64       // ShouldRateLimit answers per second
	p50, p99    time.Duration // latency of one call, as the caller sees it
	cpuPerCall  time.Duration // the server's CPU time per answer
	redisCPU    time.Duration // redis-server's, when the server uses it
	clientCPU   time.Duration // this load generator's
	rss         int64         // the server's resident set after the load, bytes
	overLimit   int           // answers OVER_LIMIT (none expected)
	failed      int           // calls that failed
	firstFailed error
}

func (r result) String() string {
	s := fmt.Sprintf("%8.0f/s p50 %-9v p99 %-9v cpu %-7v redis %-7v client %-7v rss %.1f MB", r.perSec, r.p50, r.p99, r.cpuPerCall, r.redisCPU, r.clientCPU, float64(r.rss)/1e6)
	if r.overLimit > 0 || r.failed > 0 {
		s += fmt.Sprintf(" over_limit %d failed %d (%v)", r.overLimit, r.failed, r.firstFailed)
	}
	return s
}

// load runs callers goroutines, each calling ShouldRateLimit in a loop
// with the next of reqs, for d; callers share the server's connections.
// redis, when not nil, is the redis-server whose CPU time is counted
// too.
func (s *server) load(reqs []*rlsv3.RateLimitRequest, callers int, d time.Duration, redis *process) (result, error) {
	cpu0, err := s.cpu()
	if err != nil {
		return result{}, err
	}
	self0, err := cpuOf("self")
	if err != nil {
		return result{}, err
	}
	var redis0 time.Duration
	if redis != nil {
		if redis0, err = redis.cpu(); err != nil {
			return result{}, err
		}
	}
	type tally struct {
		lat       []time.Duration
		overLimit int
		failed    int
		err       error
	}
	tallies := make([]tally, callers)
	ctx, cancel := context.WithTimeout(context.Background(), d+10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := &tallies[c]
			t.lat = make([]time.Duration, 0, 1<<14)
			client := s.clients[c%len(s.clients)]
			for i := c * 977; ; i++ {
				t0 := time.Now()
				if !t0.Before(end) {
					return
				}
				resp, err := client.ShouldRateLimit(ctx, reqs[i%len(reqs)])
				t.lat = append(t.lat, time.Since(t0))
				switch {
				case err != nil:
					t.failed++
					if t.err == nil {
						t.err = err
					}
				case resp.GetOverallCode() != rlsv3.RateLimitResponse_OK:
					t.overLimit++
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, err := s.cpu()
	if err != nil {
		return result{}, err
	}
	self1, err := cpuOf("self")
	if err != nil {
		return result{}, err
	}
	var redis1 time.Duration
	if redis != nil {
		if redis1, err = redis.cpu(); err != nil {
			return result{}, err
		}
	}
	var lat []time.Duration
	var r result
	for i := range tallies {
		lat = append(lat, tallies[i].lat...)
		r.overLimit += tallies[i].overLimit
		r.failed += tallies[i].failed
		if r.firstFailed == nil {
			r.firstFailed = tallies[i].err
		}
	}
	if len(lat) == 0 {
		return r, errors.New("no call completed")
	}
	slices.Sort(lat)
	r.perSec = float64(len(lat)) / elapsed.Seconds()
	r.p50, r.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	r.cpuPerCall = (cpu1 - cpu0) / time.Duration(len(lat))
	r.clientCPU = (self1 - self0) / time.Duration(len(lat))
	r.redisCPU = (redis1 - redis0) / time.Duration(len(lat))
	r.rss = s.rss()
	if r.failed > len(lat)/100 {
		return r, fmt.Errorf("%d of %d calls failed: %v", r.failed, len(lat), r.firstFailed)
	}
	return r, nil
}
