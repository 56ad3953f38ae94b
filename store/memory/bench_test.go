package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// BenchmarkApply: one decision on an existing key, per algorithm; 0
// allocs/op with -benchmem.
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
			for b.Loop() {
				now += int64(time.Millisecond)
				st.Apply(ctx, "key", p, 1)
			}
		})
	}
}
