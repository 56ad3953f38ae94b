package rules

import (
	"context"
	"testing"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// BenchmarkDecideStoreGroups is the allowed path of two rules (one policy
// each) over store/memory: sub-benchmark one=both rules on the engine's
// store (one ApplyAll), two=one rule local on a store of its own (two
// store calls, cheapest first), the cost of grouping by store.
func BenchmarkDecideStoreGroups(b *testing.B) {
	for _, tc := range []struct {
		name string
		tier string
	}{{"one", ""}, {"two", ConsistencyLocal}} {
		b.Run(tc.name, func(b *testing.B) {
			c := newClock()
			open := func() *memory.Store {
				st, err := memory.New(memory.Config{Clock: c.now, SweepInterval: -1})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { st.Close() })
				return st
			}
			def, loc := open(), open()
			e, err := New(Config{
				Now:    c.wall,
				Stores: func(Rule) (limit.Store, error) { return loc, nil },
				Rules: []Rule{
					{Name: "a", Policies: []Policy{{Rate: "1000000000/s"}}},
					{Name: "b", Consistency: tc.tier, Policies: []Policy{{Rate: "1000000000/s"}}},
				},
			}, def)
			if err != nil {
				b.Fatal(err)
			}
			r := get("/items/1", "192.0.2.1")
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if res, _ := e.Decide(ctx, r); res.Outcome != Allowed {
					b.Fatal(res.Outcome)
				}
			}
		})
	}
}
