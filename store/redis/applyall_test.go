package redis

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/limit/limittest"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// TestApplyAllAgainstMemory drives random batches of two or three policies
// (every algorithm, the sliding log's rollback included, sometimes one key
// twice in a batch) through the Redis store and the memory store, and
// compares every merged decision.
func TestApplyAllAgainstMemory(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	clock := func() int64 { return now }
	rs := open(t, srv.Addr, Config{Clock: clock, CacheSize: -1})
	ms, err := memory.New(memory.Config{Clock: clock, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	ctx := context.Background()
	keys := []string{"a", "b", "c", "d"}
	refused := 0
	for step := range 1500 {
		now += int64(rng.IntN(6_000)) * 1000
		n := 2 + rng.IntN(2)
		reqs := make([]limit.Request, n)
		for i := range reqs {
			pi := rng.IntN(len(policies))
			// A key belongs to one policy: name it after both.
			reqs[i] = limit.Request{Key: keys[rng.IntN(len(keys))] + "/" + policies[pi].String(), Policy: policies[pi], Cost: int64(rng.IntN(3))}
		}
		got, err := rs.ApplyAll(ctx, reqs)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ms.ApplyAll(ctx, reqs)
		if err != nil {
			t.Fatal(err)
		}
		if !same(got, want) || got.Index != want.Index || got.Policy != want.Policy {
			t.Fatalf("step %d %v:\n got  %+v\n want %+v", step, reqs, got, want)
		}
		if !got.Allowed {
			refused++
		}
	}
	if refused < 150 || refused > 1350 {
		t.Fatalf("%d of 1500 batches refused: the traffic does not exercise both outcomes", refused)
	}
	t.Logf("%d of 1500 batches refused", refused)
}
