package gossip

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/gossip/gossipconf"
)

// The counter table without memberlist: a Store on a Transport that
// carries nothing, deciding on a clock the test sets, and the table
// looked at directly.

func newTableNode(t *testing.T, maxKeys int) (*Store, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	s, err := New(Config{Config: gossipconf.Config{Name: "a", MaxKeys: maxKeys}, Clock: clock.now, Transport: &captured{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, clock
}

func (t *table) keys() (n int) {
	for i := range t.shards {
		n += len(t.shards[i].m)
	}
	return n
}

func TestTableChargesAndListsTheChange(t *testing.T) {
	s, clock := newTableNode(t, 1024)
	ctx := context.Background()
	p := limit.FixedWindow{Limit: 3, Window: time.Minute}
	for i := range 3 {
		if d, err := s.Apply(ctx, "k", p, 1); err != nil || !d.Allowed || d.Remaining != int64(2-i) {
			t.Fatalf("request %d: %+v %v", i, d, err)
		}
	}
	if d, err := s.Apply(ctx, "k", p, 1); err != nil || d.Allowed {
		t.Fatalf("fourth: %+v %v; want refused", d, err)
	}
	shd := &s.shards[s.shardIndex("k")]
	e := shd.m["k"]
	if len(shd.dirty) != 1 || shd.dirty[0] != e || !e.dirty {
		t.Fatalf("dirty list %v; want the key once", shd.dirty)
	}
	if sl := e.slot(s.self); sl.c.Cur != 3 || sl.sends != DefaultRetransmit || sl.since != clock.now() {
		t.Fatalf("own slot %+v; want 3 admitted, %d sends, since now", *sl, DefaultRetransmit)
	}
	// A peer's counter counts against this node's decisions.
	if d, _ := s.Apply(ctx, "j", p, 1); !d.Allowed {
		t.Fatalf("j: %+v", d)
	}
	s.shards[s.shardIndex("j")].m["j"].slot(s.self + 1).c = counter{Win: clock.now() / int64(time.Minute), Cur: 2}
	if d, _ := s.Apply(ctx, "j", p, 1); d.Allowed {
		t.Fatalf("1 here and 2 on a peer under a limit of 3, one more: %+v", d)
	}
	// Another limit is another shape: a changed policy starts from nothing.
	if d, _ := s.Apply(ctx, "j", limit.FixedWindow{Limit: 10, Window: time.Minute}, 1); !d.Allowed || d.Remaining != 9 {
		t.Fatalf("under a changed policy: %+v; want a fresh count", d)
	}
}

// A full shard makes room by dropping idle keys, then the least recently
// used one that is not being limited; a key at its limit is never
// evicted: ErrFull instead.
func TestTableEvictsNeverALimitedKey(t *testing.T) {
	s, clock := newTableNode(t, 32) // one key per shard
	ctx := context.Background()
	p := limit.FixedWindow{Limit: 1, Window: time.Minute}
	if _, err := s.Apply(ctx, "held", p, 1); err != nil {
		t.Fatal(err)
	}
	other := ""
	for i := 0; other == ""; i++ {
		if k := "k" + strconv.Itoa(i); s.shardIndex(k) == s.shardIndex("held") {
			other = k
		}
	}
	if _, err := s.Apply(ctx, other, p, 1); !errors.Is(err, ErrFull) {
		t.Fatalf("a newcomer in a shard full of a limited key: %v, want ErrFull", err)
	}
	if d, err := s.Apply(ctx, other, p, 0); err != nil || !d.Allowed {
		t.Fatalf("cost 0 adds no key, needs no room: %+v %v", d, err)
	}
	if s.evicted.Load() != 0 {
		t.Fatal("the limited key was evicted")
	}
	// Two windows on, "held" is idle: dropped, not evicted.
	clock.advance(2 * time.Minute)
	big := limit.FixedWindow{Limit: 100, Window: time.Minute}
	if _, err := s.Apply(ctx, other, big, 1); err != nil {
		t.Fatalf("after held aged out: %v", err)
	}
	if _, ok := s.shards[s.shardIndex("held")].m["held"]; ok || s.evicted.Load() != 0 {
		t.Fatalf("held still there, or counted evicted (%d)", s.evicted.Load())
	}
	// Under a limit of 100, the resident is not limited: evicted for a
	// newcomer.
	if _, err := s.Apply(ctx, "held", p, 1); err != nil || s.evicted.Load() != 1 || s.Stats().Evicted != 1 {
		t.Fatalf("newcomer: %v, evicted %d; want the unlimited resident evicted", err, s.evicted.Load())
	}
}

func TestTableSweepDropsIdleKeys(t *testing.T) {
	s, clock := newTableNode(t, 1024)
	p := limit.SlidingWindow{Limit: 5, Window: time.Second}
	for i := range 10 {
		s.Apply(context.Background(), "k"+strconv.Itoa(i), p, 1)
	}
	s.sweep(clock.now() + int64(time.Second)) // the previous window still counts
	if n := s.keys(); n != 10 {
		t.Fatalf("%d keys after a sweep one window on; want 10", n)
	}
	s.sweep(clock.now() + 2*int64(time.Second))
	if n := s.keys(); n != 0 {
		t.Fatalf("%d keys after a sweep two windows on; want 0", n)
	}
}
