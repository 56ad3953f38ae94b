package bench

import (
	"context"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sethvargo/go-limiter/memorystore"
	"golang.org/x/time/rate"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// The workload: a token bucket of 100/min with a burst of 20, on an
// existing key chosen at random among 1,000,000.
const nKeys = 1_000_000

var (
	keysOnce sync.Once
	keys     []string
	order    []uint32 // a fixed random sequence of key indexes
)

func loadKeys() {
	keysOnce.Do(func() {
		keys = make([]string, nKeys)
		for i := range keys {
			keys[i] = "client-" + strconv.Itoa(i)
		}
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
		for _, k := range keys {
			st.Apply(ctx, k, tollgatePolicy, 1)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			st.Apply(ctx, keys[order[i&(1<<20-1)]], tollgatePolicy, 1)
		}
	})
	b.Run("mutex_map_x_time_rate", func(b *testing.B) {
		mm := &mutexMap{m: make(map[string]*rate.Limiter)}
		for _, k := range keys {
			mm.allow(k)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			mm.allow(keys[order[i&(1<<20-1)]])
		}
	})
	b.Run("go_limiter_memorystore", func(b *testing.B) {
		st, err := memorystore.New(&memorystore.Config{Tokens: 20, Interval: time.Minute / 5})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close(ctx)
		for _, k := range keys {
			st.Take(ctx, k)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			st.Take(ctx, keys[order[i&(1<<20-1)]])
		}
	})
}

// BenchmarkHotKey: every goroutine on one key, always allowed.
func BenchmarkHotKey(b *testing.B) {
	ctx := context.Background()
	b.Run("tollgate", func(b *testing.B) {
		st, err := memory.New(memory.Config{})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		var p limit.Policy = limit.TokenBucket{Rate: limit.Per(1_000_000_000, time.Second), Burst: 1_000_000}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				st.Apply(ctx, "hot", p, 1)
			}
		})
	})
	b.Run("x_time_rate_shared", func(b *testing.B) {
		l := rate.NewLimiter(rate.Limit(1e9), 1_000_000)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Allow()
			}
		})
	})
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
