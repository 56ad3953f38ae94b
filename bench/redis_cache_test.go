package bench

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	redisstore "github.com/tollgate-dev/tollgate/store/redis"
)

// BenchmarkRedisOverLimitCache: 64 callers hammer 10 keys that are over a
// limit of 10 per hour (an abusive client), with the over-limit cache on and
// off. With it, a refusal costs no round trip until the window ends.
func BenchmarkRedisOverLimitCache(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	policy := limit.Policy(limit.FixedWindow{Limit: 10, Window: time.Hour})
	for _, cache := range []int{-1, 0} {
		name := "cache=on"
		if cache < 0 {
			name = "cache=off"
		}
		b.Run(name, func(b *testing.B) {
			st, err := redisstore.New(ctx, redisstore.Config{Addrs: []string{srv.Addr}, CacheSize: cache, Timeout: time.Second, Prefix: name + ":"})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			var wg sync.WaitGroup
			per := max(b.N/64, 1)
			b.ResetTimer()
			t0 := time.Now()
			for g := range 64 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(g), 9))
					for range per {
						st.Apply(ctx, redisKeyNames[r.IntN(10)], policy, 1)
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(per*64)/time.Since(t0).Seconds(), "decisions/s")
			b.ReportMetric(float64(st.Stats().CacheHits)/float64(per*64), "cache-hit-ratio")
			b.ReportMetric(0, "ns/op")
		})
	}
}
