package memory_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// cpuTime returns the process's CPU time (user and system) so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per operation since start as cpu-ns/op:
// on a shared machine, time spent waiting for a processor inflates ns/op
// (wall time) but not this.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkApply: one decision on an existing key, per algorithm; 0
// allocs/op with -benchmem. cpu-ns/op is the CPU time per decision.
func BenchmarkApply(b *testing.B) {
	sec := time.Second
	for _, p := range []limit.Policy{
		limit.FixedWindow{Limit: 1000, Window: sec},
		limit.SlidingLog{Limit: 1000, Window: sec},
		limit.SlidingWindow{Limit: 1000, Window: sec},
		limit.TokenBucket{Rate: limit.Per(1000, sec), Burst: 1000},
		limit.LeakyBucket{Rate: limit.Per(1000, sec), Burst: 1000},
	} {
		b.Run(p.Algorithm().String(), func(b *testing.B) {
			var now int64
			st, err := memory.New(memory.Config{Clock: func() int64 { return now }, SweepInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			ctx := context.Background()
			st.Apply(ctx, "key", p, 1)
			b.ReportAllocs()
			start := cpuTime(b)
			for b.Loop() {
				now += int64(time.Millisecond)
				st.Apply(ctx, "key", p, 1)
			}
			reportCPU(b, start)
		})
	}
}

// BenchmarkFlood: one request of two policies (token_bucket 10/s burst 20
// and sliding_window 100000/1h, one key each) from a new client into a
// full store, as a flood of addresses makes them: each makes room for two
// keys. 0 allocs/op with -benchmem.
func BenchmarkFlood(b *testing.B) {
	var now int64 = 1_767_225_600_000_000_000
	st, err := memory.New(memory.Config{MaxKeys: 1 << 16, Clock: func() int64 { return now }, SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	var tb, sw limit.Policy = limit.TokenBucket{Rate: limit.Per(10, time.Second), Burst: 20}, limit.SlidingWindow{Limit: 100_000, Window: time.Hour}
	keys := make([][2]string, 1<<20) // a client's key under each policy
	for i := range keys {
		ip := fmt.Sprint("10.", i>>16&255, ".", i>>8&255, ".", i&255)
		keys[i] = [2]string{"tb:" + ip, "sw:" + ip}
	}
	reqs := make([]limit.Request, 2)
	flood := func(i int) {
		now += int64(10 * time.Microsecond)
		k := keys[i&(len(keys)-1)]
		reqs[0] = limit.Request{Key: k[0], Policy: tb, Cost: 1}
		reqs[1] = limit.Request{Key: k[1], Policy: sw, Cost: 1}
		st.ApplyAll(ctx, reqs)
	}
	for i := range 1 << 17 { // fill it
		flood(i)
	}
	b.ReportAllocs()
	i := 1 << 17
	start := cpuTime(b)
	for b.Loop() {
		flood(i)
		i++
	}
	reportCPU(b, start)
}
