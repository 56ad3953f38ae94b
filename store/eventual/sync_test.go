package eventual

import (
	"context"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/limit/limittest"
	"github.com/tollgate-dev/tollgate/store/redis"
)

// globalCount reads key's fixed window count from Redis (a zero charge
// only reads), as a node that admitted nothing would pull it.
func globalCount(t *testing.T, addr string, clock func() int64, key string, p limit.FixedWindow) int64 {
	t.Helper()
	r, err := redis.New(context.Background(), redis.Config{Addrs: []string{addr}, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := []redis.Charge{{Key: key, Policy: p}}
	if err := r.Sync(context.Background(), c); err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return c[0].State.B // fixed window: A is the window index, B the count
}

// TestSyncPartialFailure: when one key's charge fails (its Redis key holds
// another type), the other keys' charges, applied by Redis, leave the
// pending deltas and are not pushed again; the failed one stays pending and
// arrives once Redis takes it.
func TestSyncPartialFailure(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	clock := func() int64 { return now }
	a := newNode(t, srv.Addr, clock)
	p := limit.FixedWindow{Limit: 100, Window: time.Hour}
	ctx := context.Background()
	admit(t, a, "good", p, 3)
	admit(t, a, "bad", p, 1)
	srv.CLI(t, "rpush", "tollgate:{bad}", "x") // the script's GET fails: WRONGTYPE
	for i := range 3 {
		if err := a.Sync(ctx); err == nil {
			t.Fatalf("sync %d succeeded with a WRONGTYPE key", i)
		}
	}
	if got := globalCount(t, srv.Addr, clock, "good", p); got != 3 {
		t.Fatalf("good counts %d in Redis after 3 admissions, want 3", got)
	}
	srv.CLI(t, "del", "tollgate:{bad}")
	if err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := globalCount(t, srv.Addr, clock, "bad", p); got != 1 {
		t.Fatalf("bad counts %d in Redis after 1 admission, want 1", got)
	}
	if got := globalCount(t, srv.Addr, clock, "good", p); got != 3 {
		t.Fatalf("good counts %d in Redis after the recovery, want 3", got)
	}
}

// TestPolicyChangeKeepsPending: a key whose policy changes (a reload that
// changes only the limit keeps the key) pushes what it admitted under the
// old policy along with what it admits under the new one, by Apply and by
// ApplyAll.
func TestPolicyChangeKeepsPending(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	clock := func() int64 { return now }
	a := newNode(t, srv.Addr, clock)
	ctx := context.Background()
	old, cur := limit.FixedWindow{Limit: 10, Window: time.Hour}, limit.FixedWindow{Limit: 20, Window: time.Hour}

	admit(t, a, "k", old, 6)
	admit(t, a, "k", cur, 1)
	for range 2 { // the second sync must not push them again
		if err := a.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if got := globalCount(t, srv.Addr, clock, "k", cur); got != 7 {
			t.Fatalf("k counts %d in Redis after 7 admissions, want 7", got)
		}
	}

	admit(t, a, "b", old, 4)
	for _, p := range []limit.FixedWindow{cur, old} {
		if d, err := a.ApplyAll(ctx, []limit.Request{{Key: "b", Policy: p, Cost: 1}}); err != nil || !d.Allowed {
			t.Fatalf("ApplyAll under %+v: %+v %v", p, d, err)
		}
	}
	if err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := globalCount(t, srv.Addr, clock, "b", cur); got != 6 {
		t.Fatalf("b counts %d in Redis after 6 admissions, want 6", got)
	}
}
