package bench

import (
	"context"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/sethvargo/go-limiter/memorystore"
	"golang.org/x/time/rate"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// The workload: a token bucket of 100/min with a burst of 20, on an
// existing key chosen at random among 1,000,000. As in a server, where the
// key was just read from the request, the key's bytes are in cache: each
// iteration writes "client-N" into one reused buffer (the same ~15 ns for
// every contender), so what is measured is each limiter's own lookup and
// decision, not the harness's cache misses on a table of a million strings.
const nKeys = 1_000_000

var (
	keysOnce sync.Once
	order    []uint32 // a fixed random sequence of key indexes
)

// keyer writes key i into a reused buffer and returns it as a string that
// aliases the buffer: valid until the next call, and never stored, since
// every key exists before timing starts.
type keyer struct{ buf []byte }

func (k *keyer) key(i uint32) string {
	k.buf = strconv.AppendUint(append(k.buf[:0], "client-"...), uint64(i), 10)
	return unsafe.String(unsafe.SliceData(k.buf), len(k.buf))
}

// each calls fill with every key once, as a fresh string.
func each(fill func(key string)) {
	for i := range nKeys {
		fill("client-" + strconv.Itoa(i))
	}
}

func loadKeys() {
	keysOnce.Do(func() {
		r := rand.New(rand.NewPCG(1, 2))
		order = make([]uint32, 1<<20)
		for i := range order {
			order[i] = uint32(r.IntN(nKeys))
		}
	})
}

var tollgatePolicy limit.Policy = limit.TokenBucket{Rate: limit.Per(100, time.Minute), Burst: 20}

// mutexMap is the common idiom: one mutex over a map of x/time/rate limiters.
type mutexMap struct {
	mu sync.Mutex
	m  map[string]*rate.Limiter
}

func (mm *mutexMap) allow(key string) bool {
	mm.mu.Lock()
	l, ok := mm.m[key]
	if !ok {
		l = rate.NewLimiter(rate.Every(time.Minute/100), 20)
		mm.m[key] = l
	}
	mm.mu.Unlock()
	return l.Allow()
}

func BenchmarkRandomKey(b *testing.B) {
	loadKeys()
	ctx := context.Background()
	b.Run("tollgate", func(b *testing.B) {
		st, err := memory.New(memory.Config{MaxKeys: 2 * nKeys})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		each(func(k string) { st.Apply(ctx, k, tollgatePolicy, 1) })
		var k keyer
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			st.Apply(ctx, k.key(order[i&(1<<20-1)]), tollgatePolicy, 1)
		}
	})
	b.Run("mutex_map_x_time_rate", func(b *testing.B) {
		mm := &mutexMap{m: make(map[string]*rate.Limiter)}
		each(func(k string) { mm.allow(k) })
		var k keyer
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			mm.allow(k.key(order[i&(1<<20-1)]))
		}
	})
	b.Run("go_limiter_memorystore", func(b *testing.B) {
		st, err := memorystore.New(&memorystore.Config{Tokens: 20, Interval: time.Minute / 5})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close(ctx)
		each(func(k string) { st.Take(ctx, k) })
		var k keyer
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			st.Take(ctx, k.key(order[i&(1<<20-1)]))
		}
	})
}

// BenchmarkHotKey: every goroutine on one key, always allowed (the
// stress variants: 8 goroutines per processor; and a key being limited,
// refusing nearly every request, as a flood of one client makes it).
// cpu-ns/op is the process's CPU time per decision, which a shared
// machine disturbs less than ns/op: on P cores ns/op is about
// cpu-ns/op ÷ P when nothing else runs.
func BenchmarkHotKey(b *testing.B) {
	ctx := context.Background()
	allowAll := limit.TokenBucket{Rate: limit.Per(1_000_000_000, time.Second), Burst: 1_000_000}
	flood := limit.TokenBucket{Rate: limit.Per(1000, time.Second), Burst: 100}
	tollgate := func(b *testing.B, clock func() int64, p limit.Policy, par int) {
		st, err := memory.New(memory.Config{Clock: clock})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		parallel(b, par, func() { st.Apply(ctx, "hot", p, 1) })
	}
	rateLimiter := func(b *testing.B, l *rate.Limiter, par int) {
		parallel(b, par, func() { l.Allow() })
	}
	b.Run("tollgate", func(b *testing.B) { tollgate(b, nil, allowAll, 1) })
	b.Run("tollgate_coarse_clock", func(b *testing.B) {
		clock := memory.NewCoarseClock(time.Millisecond)
		defer clock.Close()
		tollgate(b, clock.Now, allowAll, 1)
	})
	b.Run("x_time_rate_shared", func(b *testing.B) {
		rateLimiter(b, rate.NewLimiter(rate.Limit(1e9), 1_000_000), 1)
	})
	b.Run("tollgate_8_per_core", func(b *testing.B) { tollgate(b, nil, allowAll, 8) })
	b.Run("x_time_rate_8_per_core", func(b *testing.B) {
		rateLimiter(b, rate.NewLimiter(rate.Limit(1e9), 1_000_000), 8)
	})
	b.Run("tollgate_refusing", func(b *testing.B) { tollgate(b, nil, flood, 1) })
	b.Run("x_time_rate_refusing", func(b *testing.B) {
		rateLimiter(b, rate.NewLimiter(rate.Limit(1000), 100), 1)
	})
}

// parallel runs decide in b.RunParallel with par goroutines per processor
// and reports the CPU time per decision.
func parallel(b *testing.B, par int, decide func()) {
	b.SetParallelism(par)
	b.ReportAllocs()
	start := cpuTime(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			decide()
		}
	})
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}

// cpuTime returns the process's CPU time (user and system) so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapPerKey builds a structure holding n live keys with fill and returns
// the heap in use it added, per key.
func heapPerKey(n int, fill func(key string)) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	buf := make([]byte, 0, 32)
	for i := range n {
		buf = strconv.AppendInt(append(buf[:0], "client-"...), int64(i), 10)
		fill(string(buf))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	return float64(after.HeapInuse-before.HeapInuse) / float64(n)
}

// BenchmarkMemoryPerKey reports heap bytes per live token-bucket key for
// 1,000,000 keys (heap in use after GC ÷ keys); ns/op is meaningless here.
func BenchmarkMemoryPerKey(b *testing.B) {
	ctx := context.Background()
	b.Run("tollgate", func(b *testing.B) {
		for b.Loop() {
			st, _ := memory.New(memory.Config{MaxKeys: 2 * nKeys, SweepInterval: -1})
			per := heapPerKey(nKeys, func(k string) { st.Apply(ctx, k, tollgatePolicy, 1) })
			b.ReportMetric(per, "B/key")
			runtime.KeepAlive(st)
		}
	})
	b.Run("mutex_map_x_time_rate", func(b *testing.B) {
		for b.Loop() {
			mm := &mutexMap{m: make(map[string]*rate.Limiter)}
			per := heapPerKey(nKeys, func(k string) { mm.allow(k) })
			b.ReportMetric(per, "B/key")
			runtime.KeepAlive(mm)
		}
	})
	b.Run("go_limiter_memorystore", func(b *testing.B) {
		for b.Loop() {
			st, _ := memorystore.New(&memorystore.Config{Tokens: 20, Interval: time.Minute / 5, SweepInterval: time.Hour})
			per := heapPerKey(nKeys, func(k string) { st.Take(ctx, k) })
			b.ReportMetric(per, "B/key")
			runtime.KeepAlive(st)
			st.Close(ctx)
		}
	})
}
