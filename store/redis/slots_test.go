package redis

import (
	"context"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
)

func TestSlotsOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	st := open(t, srv.Addr, Config{Prefix: "slots:"})
	sl := st.Slots(300 * time.Millisecond)
	defer sl.Close()
	ctx := context.Background()
	var leases []uint64
	for i := range 3 {
		got, err := sl.Acquire(ctx, "k", 3)
		if err != nil || !got.OK || got.Held != int64(i+1) {
			t.Fatalf("acquire %d: %+v %v", i+1, got, err)
		}
		leases = append(leases, uint64(got.Lease))
	}
	if got, err := sl.Acquire(ctx, "k", 3); err != nil || got.OK || got.Held != 3 {
		t.Fatalf("the fourth: %+v %v", got, err)
	}
	// Held past the lease: the renewer keeps them.
	time.Sleep(600 * time.Millisecond)
	if got, _ := sl.Acquire(ctx, "k", 3); got.OK {
		t.Fatal("a renewed slot expired")
	}
	if err := sl.Release(ctx, "k", limit.Lease(leases[0])); err != nil {
		t.Fatal(err)
	}
	got, err := sl.Acquire(ctx, "k", 3)
	if err != nil || !got.OK {
		t.Fatalf("after a release: %+v %v", got, err)
	}
	if sl.Held() != 3 {
		t.Fatalf("holds %d", sl.Held())
	}
}

// A gateway that dies holding slots (no release, no renewal) gives them
// back within a lease.
func TestSlotsOfADeadProcessComeBack(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	dead := open(t, srv.Addr, Config{Prefix: "slots:"}).Slots(300 * time.Millisecond)
	for range 2 {
		if got, err := dead.Acquire(ctx, "k", 2); err != nil || !got.OK {
			t.Fatalf("%+v %v", got, err)
		}
	}
	dead.Close() // the renewer stops, as in a killed process
	live := open(t, srv.Addr, Config{Prefix: "slots:"}).Slots(300 * time.Millisecond)
	defer live.Close()
	if got, _ := live.Acquire(ctx, "k", 2); got.OK {
		t.Fatal("the dead process's slots were free at once")
	}
	start := time.Now()
	for {
		got, err := live.Acquire(ctx, "k", 2)
		if err != nil {
			t.Fatal(err)
		}
		if got.OK {
			break
		}
		if time.Since(start) > 2*time.Second {
			t.Fatal("the dead process's slots never came back")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if waited := time.Since(start); waited > 700*time.Millisecond {
		t.Errorf("slots came back after %v, want within a lease of 300ms (plus the renewal's third)", waited)
	}
	// The first slot may come back a moment before the second (they were
	// taken one after the other): once both leases have run out, a
	// second slot is free too, and the set holds the live process's two
	// only, the expired ones dropped.
	time.Sleep(400 * time.Millisecond)
	if got, err := live.Acquire(ctx, "k", 2); err != nil || !got.OK {
		t.Fatalf("second slot after both leases ran out: %+v %v", got, err)
	}
	if n := srv.CLI(t, "ZCARD", "slots:{k}"); n != "2" {
		t.Errorf("ZCARD %q after the expired ones were dropped, want 2 (the live ones)", n)
	}
}
