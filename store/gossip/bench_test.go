package gossip

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/eventual"
	"github.com/tollgate-dev/tollgate/store/gossip/gossipconf"
	"github.com/tollgate-dev/tollgate/store/redis"
)

// The fleet benchmarks measure the gossip tier over real memberlist nodes
// on loopback, at the default 100ms interval. Run them once each:
//
//	go test -run '^$' -bench 'Fleet' -benchtime 1x ./store/gossip
//
// They report metrics, not ns/op.

// BenchmarkFleetConvergence: every node admits 10 on a new key at once;
// the time until every node's view is within 1% of the fleet's total.
// Four variants, their bursts interleaved on one fleet (so that the
// machine's load hits them alike), 30 bursts each: rounds on the tick
// only (before the nudge) or a change after a quiet interval sent at once
// (the nudge, the default); each burst right after the previous one
// converged (back to back) or after two quiet intervals.
func BenchmarkFleetConvergence(b *testing.B) {
	type variant struct {
		name     string
		tickOnly bool
		quiet    time.Duration
	}
	variants := []variant{
		{"tick-only/back-to-back", true, 0},
		{"nudge/back-to-back", false, 0},
		{"tick-only/after-quiet", true, 2 * gossipconf.DefaultInterval},
		{"nudge/after-quiet", false, 2 * gossipconf.DefaultInterval},
	}
	for _, n := range []int{10, 32} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			nodes := startFleet(b, n, nil)
			b.ResetTimer()
			ds := make([][]time.Duration, len(variants))
			for i := range 30 * len(variants) {
				v := variants[i%len(variants)]
				for _, s := range nodes {
					s.tickOnly.Store(v.tickOnly)
				}
				time.Sleep(v.quiet)
				ds[i%len(variants)] = append(ds[i%len(variants)], burst(b, nodes, fmt.Sprintf("conv-%d-%d", b.N, i), 10))
			}
			for i, v := range variants {
				b.Logf("%d nodes, %s: p50 %v, p99 %v", n, v.name, percentile(ds[i], 50), percentile(ds[i], 99))
			}
			b.ReportMetric(float64(percentile(ds[1], 50).Milliseconds()), "p50-ms")
			b.ReportMetric(float64(percentile(ds[1], 99).Milliseconds()), "p99-ms")
			b.ReportMetric(float64(percentile(ds[3], 99).Milliseconds()), "quiet-p99-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkFleetTransport: the convergence of 32 nodes (back to back
// bursts) on memberlist's NetTransport, which allocates 64 KiB per packet
// received, and on this package's transport, which allocates the
// packet's size: two fleets, one after the other, twice, 20 bursts each
// time.
func BenchmarkFleetTransport(b *testing.B) {
	const n = 32
	ds := map[bool][]time.Duration{}
	for round := range 2 {
		for _, net := range []bool{true, false} {
			nodes := startFleet(b, n, nil, func(c *Config) {
				c.netTransport = net
				c.Name = fmt.Sprintf("%s-%v-%d", c.Name, net, round)
			})
			for i := range 20 {
				ds[net] = append(ds[net], burst(b, nodes, fmt.Sprintf("tr-%v-%d-%d", net, round, i), 10))
			}
			for _, s := range nodes {
				s.shutdown(false)
			}
		}
	}
	for _, net := range []bool{true, false} {
		name := map[bool]string{true: "memberlist NetTransport", false: "gossip transport"}[net]
		b.Logf("32 nodes, %s: p50 %v, p99 %v", name, percentile(ds[net], 50), percentile(ds[net], 99))
	}
	b.ReportMetric(float64(percentile(ds[true], 99).Milliseconds()), "net-p99-ms")
	b.ReportMetric(float64(percentile(ds[false], 99).Milliseconds()), "own-p99-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkFleetOvershoot: 10 nodes, each sending 200 requests a second
// on one key, evenly, from the start of a 2s fixed window whose limit of
// 2,000 is reached after about a second: what the fleet admits beyond the
// limit, against nodes × rate per node × interval. Three windows per tier,
// side by side: gossip, eventual (one Redis, the same 100ms interval) and
// strict (every decision in Redis).
func BenchmarkFleetOvershoot(b *testing.B) {
	const n = 10
	for _, tickOnly := range []bool{true, false} {
		name := "tier=gossip"
		if tickOnly {
			name += "/tick-only"
		}
		b.Run(name, func(b *testing.B) {
			var stores []limit.Store
			for _, s := range startFleet(b, n, nil) {
				s.tickOnly.Store(tickOnly)
				stores = append(stores, s)
			}
			overshoot(b, stores)
		})
	}
	srv := redistest.Start(b)
	redisNodes := func(b *testing.B, prefix string) []*redis.Store {
		var rs []*redis.Store
		for range n {
			r, err := redis.New(context.Background(), redis.Config{Addrs: []string{srv.Addr}, Prefix: prefix, Timeout: 5 * time.Second, OnFailure: failmode.Closed})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { r.Close() })
			rs = append(rs, r)
		}
		return rs
	}
	b.Run("tier=eventual", func(b *testing.B) {
		var stores []limit.Store
		for _, r := range redisNodes(b, "ev:") {
			e, err := eventual.New(eventual.Config{Redis: r, Interval: gossipconf.DefaultInterval})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { e.Close() })
			stores = append(stores, e)
		}
		overshoot(b, stores)
	})
	b.Run("tier=strict", func(b *testing.B) {
		var stores []limit.Store
		for _, r := range redisNodes(b, "st:") {
			stores = append(stores, r)
		}
		overshoot(b, stores)
	})
}

func overshoot(b *testing.B, nodes []limit.Store) {
	const (
		rate   = 200 // per node per second
		window = 2 * time.Second
		lim    = 2000
	)
	n := len(nodes)
	p := limit.FixedWindow{Limit: lim, Window: window}
	ctx := context.Background()
	b.ResetTimer()
	var over, formula []float64
	defer func() {
		if len(over) > 0 {
			b.ReportMetric(median(over), "overshoot")
			b.ReportMetric(median(formula), "formula")
		}
		b.ReportMetric(0, "ns/op")
	}()
	for run := range 3 {
		// Start at a window's start.
		now := time.Now()
		time.Sleep(now.Truncate(window).Add(window + 5*time.Millisecond).Sub(now))
		key := fmt.Sprintf("over-%d-%d", b.N, run)
		var admitted, sent atomic.Int64
		start := time.Now()
		var wg sync.WaitGroup
		for _, s := range nodes {
			wg.Go(func() {
				t := time.NewTicker(5 * time.Millisecond)
				defer t.Stop()
				mine := 0
				for time.Since(start) < window*9/10 {
					<-t.C
					// One request per 5ms, catching up when the machine
					// is slow.
					for due := int(time.Since(start) * rate / time.Second); mine < due; mine++ {
						sent.Add(1)
						if d, err := s.Apply(ctx, key, p, 1); err == nil && d.Allowed {
							admitted.Add(1)
						}
					}
				}
			})
		}
		wg.Wait()
		perNode := float64(sent.Load()) / float64(n) / time.Since(start).Seconds()
		if sent.Load() < lim*5/4 {
			b.Logf("run %d: %d sent, too few to measure on this machine; skipped", run, sent.Load())
			continue
		}
		over = append(over, float64(admitted.Load()-lim))
		formula = append(formula, float64(n)*perNode*gossipconf.DefaultInterval.Seconds())
		b.Logf("run %d: admitted %d of %d sent (limit %d), %.0f req/s per node", run, admitted.Load(), sent.Load(), lim, perNode)
	}
}

// BenchmarkFleetBandwidth: 10 nodes, 10,000 keys, every node sending
// 1,000 requests a second spread over all of them (each key sees a
// request a second from somewhere): the gossip bytes each node sends per
// second (the retransmissions after the traffic stops included), then
// what a quiet second costs once they are over.
func BenchmarkFleetBandwidth(b *testing.B) {
	const (
		n    = 10
		keys = 10000
		rate = 1000 // per node per second
		dur  = 3 * time.Second
	)
	nodes := startFleet(b, n, nil)
	p := limit.FixedWindow{Limit: 1 << 30, Window: time.Hour}
	ctx := context.Background()
	names := make([]string, keys)
	for i := range names {
		names[i] = "client:" + strconv.Itoa(i)
	}
	sentBytes := func() (total uint64) {
		for _, s := range nodes {
			total += s.Stats().BytesSent
		}
		return total
	}
	b.ResetTimer()
	before := sentBytes()
	start := time.Now()
	var wg sync.WaitGroup
	var reqs atomic.Int64
	for i, s := range nodes {
		wg.Go(func() {
			t := time.NewTicker(10 * time.Millisecond)
			defer t.Stop()
			k, sent := i*keys/n, 0
			for time.Since(start) < dur {
				<-t.C
				// Catch up with the schedule when the machine is slow.
				for due := int(time.Since(start) * rate / time.Second); sent < due; sent++ {
					s.Apply(ctx, names[k%keys], p, 1)
					k++
				}
			}
			reqs.Add(int64(sent))
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	// The last retransmissions: Retransmit rounds on an idle machine,
	// longer when the rounds fall behind. Wait until two intervals pass
	// without a byte sent (at most 10s), and report how long it took.
	drainStart := time.Now()
	for last := sentBytes(); time.Since(drainStart) < 10*time.Second; {
		time.Sleep(2 * gossipconf.DefaultInterval)
		now := sentBytes()
		if now == last {
			break
		}
		last = now
	}
	drain := time.Since(drainStart)
	busy := sentBytes() - before
	quietFrom := sentBytes()
	time.Sleep(time.Second)
	quiet := sentBytes() - quietFrom
	b.ReportMetric(float64(busy)/n/elapsed.Seconds(), "bytes/node/s")
	b.ReportMetric(float64(busy)/float64(reqs.Load()), "bytes/request")
	b.ReportMetric(float64(quiet)/n, "quiet-bytes/node/s")
	b.ReportMetric(float64(reqs.Load())/n/elapsed.Seconds(), "req/node/s")
	b.ReportMetric(float64(drain.Milliseconds()), "drain-ms")
	b.ReportMetric(0, "ns/op")
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

// BenchmarkApply is one decision on one hot key, the hot path.
func BenchmarkApply(b *testing.B) {
	s := newNode(b, "a", newFakeClock(), nil, func(c *Config) { c.Interval = time.Hour })
	p := limit.Policy(limit.TokenBucket{Rate: limit.Per(1<<30, time.Minute), Burst: 1 << 30})
	ctx := context.Background()
	if d, err := s.Apply(ctx, "hot", p, 1); err != nil || !d.Allowed {
		b.Fatalf("Apply: %+v %v", d, err) // not the error path
	}
	b.ReportAllocs()
	for b.Loop() {
		s.Apply(ctx, "hot", p, 1)
	}
}

// BenchmarkApplyAll is one request under two limits on two keys, all or
// nothing: the decision of a route with a per-client and a global limit.
// Rounds on the tick only (an hour): the decision alone, without the
// rounds each change after a quiet spell nudges (see Store.nudge).
func BenchmarkApplyAll(b *testing.B) {
	s := newNode(b, "a", newFakeClock(), nil, func(c *Config) { c.Interval = time.Hour })
	s.tickOnly.Store(true)
	reqs := []limit.Request{
		{Key: "client", Policy: limit.TokenBucket{Rate: limit.Per(1<<30, time.Minute), Burst: 1 << 30}, Cost: 1},
		{Key: "route", Policy: limit.FixedWindow{Limit: 1 << 40, Window: time.Minute}, Cost: 1},
	}
	ctx := context.Background()
	if d, err := s.ApplyAll(ctx, reqs); err != nil || !d.Allowed {
		b.Fatalf("ApplyAll: %+v %v", d, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.ApplyAll(ctx, reqs)
	}
}
