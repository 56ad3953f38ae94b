package gossip

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// The counter table on its own: no memberlist, no clock but the one
// given.

func newTestTable(t *testing.T, maxKeys int) *table {
	t.Helper()
	tb := &table{self: 1}
	tb.init(maxKeys)
	return tb
}

func tableApply(t *testing.T, tb *table, key string, p limit.Policy, now, cost int64) (limit.Decision, bool, error) {
	t.Helper()
	sp, sh, err := shapeOf(p)
	if err != nil {
		t.Fatal(err)
	}
	return tb.apply(key, sp, sh, now, cost, 3)
}

func TestTableDecidesAndListsTheChange(t *testing.T) {
	tb := newTestTable(t, 1024)
	p := limit.FixedWindow{Limit: 3, Window: time.Minute}
	now := testNow
	for i := range 3 {
		d, fresh, err := tableApply(t, tb, "k", p, now, 1)
		if err != nil || !d.Allowed || d.Remaining != int64(2-i) {
			t.Fatalf("request %d: %+v %v", i, d, err)
		}
		if fresh != (i == 0) {
			t.Fatalf("request %d: fresh %v; want only the first change listed", i, fresh)
		}
	}
	if d, fresh, err := tableApply(t, tb, "k", p, now, 1); err != nil || d.Allowed || fresh {
		t.Fatalf("fourth: %+v fresh %v %v; want refused, nothing listed", d, fresh, err)
	}
	shd := &tb.shards[tb.shardIndex("k")]
	e := shd.m["k"]
	if len(shd.dirty) != 1 || shd.dirty[0] != e || !e.dirty {
		t.Fatalf("dirty list %v; want the key once", shd.dirty)
	}
	if sl := e.slot(tb.self); sl.c.Cur != 3 || sl.sends != 3 || sl.since != now {
		t.Fatalf("own slot %+v; want 3 admitted, 3 sends, since %d", *sl, now)
	}
	// A peer's counter counts against this node's decisions.
	e.slot(2).c = counter{Win: now / int64(time.Minute), Cur: 5}
	p10 := limit.FixedWindow{Limit: 10, Window: time.Minute}
	if d, _, _ := tableApply(t, tb, "k", p10, now, 0); d.Remaining != 10 {
		// a changed policy (another limit: another shape) starts from nothing
		t.Fatalf("under a changed policy: %+v; want a fresh count", d)
	}
	if d, _, _ := tableApply(t, tb, "k", p, now, 0); d.Allowed {
		t.Fatalf("3 here and 5 on a peer under a limit of 3: %+v", d)
	}
}

// A full shard makes room by dropping idle keys, then the least recently
// used that is not being limited; a key at its limit is never evicted:
// ErrFull instead.
func TestTableEvictsNeverALimitedKey(t *testing.T) {
	tb := newTestTable(t, 32) // one key per shard
	p := limit.FixedWindow{Limit: 1, Window: time.Minute}
	now := testNow
	if _, _, err := tableApply(t, tb, "held", p, now, 1); err != nil {
		t.Fatal(err)
	}
	other := ""
	for i := 0; other == ""; i++ {
		if k := "k" + strconv.Itoa(i); tb.shardIndex(k) == tb.shardIndex("held") {
			other = k
		}
	}
	if _, _, err := tableApply(t, tb, other, p, now, 1); !errors.Is(err, ErrFull) {
		t.Fatalf("a newcomer in a shard full of a limited key: %v, want ErrFull", err)
	}
	if tb.evicted.Load() != 0 {
		t.Fatal("the limited key was evicted")
	}
	// A refusal or a zero cost adds no key.
	if d, _, err := tableApply(t, tb, other, p, now, 0); err != nil || !d.Allowed {
		t.Fatalf("cost 0: %+v %v", d, err)
	}
	// Two windows on, "held" is idle: dropped, not evicted.
	later := now + 2*int64(time.Minute)
	big := limit.FixedWindow{Limit: 100, Window: time.Minute}
	if _, _, err := tableApply(t, tb, other, big, later, 1); err != nil {
		t.Fatalf("after held aged out: %v", err)
	}
	if _, ok := tb.shards[tb.shardIndex("held")].m["held"]; ok || tb.evicted.Load() != 0 {
		t.Fatalf("held still there, or counted evicted (%d)", tb.evicted.Load())
	}
	// Under a limit of 100, the resident is not limited: evicted for a
	// newcomer.
	if _, _, err := tableApply(t, tb, "held", p, later, 1); err != nil || tb.evicted.Load() != 1 {
		t.Fatalf("newcomer: %v, evicted %d; want the unlimited resident evicted", err, tb.evicted.Load())
	}
}

func TestTableSweepDropsIdleKeys(t *testing.T) {
	tb := newTestTable(t, 1024)
	p := limit.SlidingWindow{Limit: 5, Window: time.Second}
	now := testNow
	for i := range 10 {
		tableApply(t, tb, "k"+strconv.Itoa(i), p, now, 1)
	}
	keys := func() (n int) {
		for i := range tb.shards {
			n += len(tb.shards[i].m)
		}
		return n
	}
	tb.sweep(now + int64(time.Second)) // the previous window still counts
	if n := keys(); n != 10 {
		t.Fatalf("%d keys after a sweep one window on; want 10", n)
	}
	tb.sweep(now + 2*int64(time.Second))
	if n := keys(); n != 0 {
		t.Fatalf("%d keys after a sweep two windows on; want 0", n)
	}
}

func TestTableApplyAllocatesNothing(t *testing.T) {
	tb := newTestTable(t, 1024)
	p := limit.TokenBucket{Rate: limit.Per(1<<30, time.Minute), Burst: 1 << 30}
	tableApply(t, tb, "hot", p, testNow, 1)
	sp, sh, _ := shapeOf(p)
	if n := testing.AllocsPerRun(1000, func() { tb.apply("hot", sp, sh, testNow, 1, 3) }); n != 0 {
		t.Fatalf("%v allocations per decision", n)
	}
}
