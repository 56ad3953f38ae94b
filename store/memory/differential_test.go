package memory

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// TestMatchesPureAlgorithms drives one shard (so every key shares the hot
// slot, the table, the sweeper and eviction) with random single requests,
// batches, sweeps and clock steps, and checks every decision against the
// pure algorithms applied to a plain map: the store's caching and
// bookkeeping never change a decision.
func TestMatchesPureAlgorithms(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	s, now := newTest(t, Config{Shards: 1})
	ctx := context.Background()
	sec := time.Second
	pols := map[string]limit.Stateful{
		"tb": limit.TokenBucket{Rate: limit.Per(5, sec), Burst: 3},
		"fw": limit.FixedWindow{Limit: 4, Window: sec},
		"sw": limit.SlidingWindow{Limit: 4, Window: sec},
		"lb": limit.LeakyBucket{Rate: limit.Per(5, sec), Burst: 2, Mode: limit.Shape, Delay: 1},
	}
	names := []string{"tb", "fw", "sw", "lb"}
	ref := map[string]limit.State{}
	same := func(step int, what string, got, want limit.Decision) {
		t.Helper()
		got.Policy, got.Index = nil, 0
		if got != want {
			t.Fatalf("step %d %s:\n got  %+v\n want %+v", step, what, got, want)
		}
	}
	for step := range 20_000 {
		*now += int64(r.IntN(120)) * int64(time.Millisecond)
		switch op := r.IntN(10); {
		case op < 6: // one request; repeats make keys hot
			k := names[r.IntN(len(names))]
			if r.IntN(2) == 0 {
				k = names[0]
			}
			cost := int64(r.IntN(3))
			got, err := s.Apply(ctx, k, pols[k], cost)
			if err != nil {
				t.Fatal(err)
			}
			var want limit.Decision
			ref[k], want = pols[k].Decide(ref[k], *now, cost)
			same(step, "Apply "+k, got, want)
		case op < 9: // a batch of two
			a, b := names[r.IntN(len(names))], names[r.IntN(len(names))]
			if a == b {
				continue
			}
			cost := int64(1 + r.IntN(2))
			got, err := s.ApplyAll(ctx, []limit.Request{{Key: a, Policy: pols[a], Cost: cost}, {Key: b, Policy: pols[b], Cost: cost}})
			if err != nil {
				t.Fatal(err)
			}
			na, da := pols[a].Decide(ref[a], *now, cost)
			nb, db := pols[b].Decide(ref[b], *now, cost)
			if da.Allowed && db.Allowed {
				ref[a], ref[b] = na, nb
			}
			db.Index = 1
			want := limit.Merge(da, db)
			if got.Index != want.Index {
				t.Fatalf("step %d batch: index %d, want %d", step, got.Index, want.Index)
			}
			want.Index = 0
			same(step, "ApplyAll "+a+"+"+b, got, want)
		default:
			s.sweepShard(&s.shards[0], *now)
		}
	}
}
