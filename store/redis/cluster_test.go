package redis

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
)

// TestCluster runs against a real three-master Redis Cluster: strict
// decisions stay exact while the hot key's slot migrates to another master
// during traffic (clients get MOVED and ASK redirects), ApplyAll works for
// keys sharing a hash tag, and refuses keys in different slots.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := redistest.StartCluster(t)
	s, err := New(context.Background(), Config{Addrs: c.Addrs()[:1], OnFailure: failmode.Closed, CacheSize: -1, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.conn.Load().cluster {
		t.Fatal("client did not detect cluster mode")
	}
	ctx := context.Background()
	const limitN = 3000
	p := limit.FixedWindow{Limit: limitN, Window: time.Hour}
	slot := int(keySlot(s.redisKey("hot")))
	src := c.Owner(t, slot)
	var dst *redistest.Server
	for _, n := range c.Nodes {
		if n != src {
			dst = n
			break
		}
	}
	var allowed, done atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				d, err := s.Apply(ctx, "hot", p, 1)
				if err != nil {
					t.Errorf("apply: %v", err)
					return
				}
				if d.Allowed {
					allowed.Add(1)
				}
				done.Add(1)
			}
		}()
	}
	waitFor(t, func() bool { return done.Load() > 500 })
	c.MoveSlot(t, slot, src, dst) // traffic runs on during the migration
	moved := done.Load()
	waitFor(t, func() bool { return done.Load() > max(moved+1000, limitN+500) })
	stop.Store(true)
	wg.Wait()
	if got := c.Owner(t, slot); got != dst {
		t.Fatalf("slot %d still on %s", slot, got.Addr)
	}
	if es := src.CLI(t, "info", "errorstats"); !strings.Contains(es, "errorstat_MOVED") {
		t.Errorf("the old owner sent no MOVED redirect: %q", es)
	} else {
		t.Logf("old owner's error stats: %s", strings.ReplaceAll(es, "\r\n", " "))
	}
	st := s.Stats()
	t.Logf("slot %d moved %s -> %s after %d of %d requests; allowed %d; stats %+v", slot, src.Addr, dst.Addr, moved, done.Load(), allowed.Load(), st)
	if allowed.Load() != limitN || st.Failures != 0 {
		t.Fatalf("allowed %d of limit %d with %d failures", allowed.Load(), limitN, st.Failures)
	}

	// ApplyAll: keys with a common hash tag share a slot.
	both := []limit.Request{
		{Key: "a:{client7}", Policy: limit.FixedWindow{Limit: 2, Window: time.Hour}, Cost: 1},
		{Key: "b:{client7}", Policy: limit.FixedWindow{Limit: 1, Window: time.Hour}, Cost: 1},
	}
	if d, err := s.ApplyAll(ctx, both); err != nil || !d.Allowed {
		t.Fatalf("ApplyAll: %+v %v", d, err)
	}
	if d, err := s.ApplyAll(ctx, both); err != nil || d.Allowed || d.Index != 1 {
		t.Fatalf("ApplyAll over b's limit: %+v %v", d, err)
	}
	apart := []limit.Request{both[0], {Key: "elsewhere", Policy: both[1].Policy, Cost: 1}}
	if keySlot(s.redisKey(apart[0].Key)) == keySlot(s.redisKey(apart[1].Key)) {
		t.Fatal("test keys share a slot")
	}
	if _, err := s.ApplyAll(ctx, apart); !errors.Is(err, ErrCrossSlot) {
		t.Fatalf("cross-slot ApplyAll: %v", err)
	}
}

func TestKeySlot(t *testing.T) {
	// Values from the Redis Cluster specification and redis-cli CLUSTER KEYSLOT.
	for key, want := range map[string]uint16{"123456789": 12739, "foo": 12182, "{user1000}.following": 3443, "foo{}{bar}": 8363} {
		if got := keySlot(key); got != want {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, want)
		}
	}
}
