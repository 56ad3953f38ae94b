package gossip

import (
	"math"
	"testing"
	"time"
)

// Every node applies the fleet's lowest value within a second of its
// publication, over real memberlist sockets on loopback; a node whose
// entry is stale drops out of the minimum.
func TestSharedValuesReachEveryNodeWithinASecond(t *testing.T) {
	nodes := startFleet(t, 3, nil)
	now := time.Now()
	for _, s := range nodes {
		if err := s.PublishValue("adaptive:api", 1, now); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every node to hear every node", func() bool {
		for _, s := range nodes {
			if s.ValueStats().Entries != 3 {
				return false
			}
		}
		return true
	})
	start := time.Now()
	if err := nodes[1].PublishValue("adaptive:api", 0.4, start); err != nil {
		t.Fatal(err)
	}
	for {
		all := true
		for _, s := range nodes {
			if v, ok := s.LowestValue("adaptive:api", start.Add(-3*time.Second)); !ok || v != 0.4 {
				all = false
			}
		}
		if all {
			break
		}
		if time.Since(start) > time.Second {
			t.Fatalf("not every node applies 0.4 a second after its publication")
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("every node applies the lowest value %v after its publication", time.Since(start))

	// The node that cut stops publishing: once its entry is older than
	// the freshness window, the others' values stand again.
	later := start.Add(10 * time.Second)
	for _, i := range []int{0, 2} {
		if err := nodes[i].PublishValue("adaptive:api", 0.9, later); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the stale entry to drop out", func() bool {
		v, ok := nodes[0].LowestValue("adaptive:api", later.Add(-3*time.Second))
		return ok && v == 0.9
	})
	if _, ok := nodes[0].LowestValue("other", start.Add(-time.Hour)); ok {
		t.Error("a value nobody published has a lowest")
	}
}

// Copies merge by the latest stamp, whatever order they arrive in; a
// tie goes to the lower value.
func TestSharedValuesMergeByLatestStamp(t *testing.T) {
	var tb valueTable
	k := valueKey{"x", "n1"}
	tb.merge(k, valueEntry{at: 20, v: 0.5}, 20)
	tb.merge(k, valueEntry{at: 10, v: 0.1}, 20) // late: changes nothing
	if e := tb.m[k]; e.at != 20 || e.v != 0.5 {
		t.Fatalf("late copy won: %+v", e)
	}
	tb.merge(k, valueEntry{at: 20, v: 0.3}, 20)
	tb.merge(k, valueEntry{at: 20, v: 0.4}, 20)
	if e := tb.m[k]; e.v != 0.3 {
		t.Fatalf("tie kept %v, want the lower 0.3", e.v)
	}
}

// A value message that fails to decode, claims a value outside [0, 1]
// or a stamp in the future is dropped and counted, and changes nothing.
func TestBadValueMessagesAreDroppedAndCounted(t *testing.T) {
	nodes := startFleet(t, 2, nil)
	a, b := nodes[0], nodes[1]
	target := nodeOf(t, a)
	now := time.Now().UnixMilli()
	good := encodeValue("adaptive:api", "b", now, 0.5)
	for _, m := range [][]byte{
		{wireVersion, kindValue, 0, 0},
		good[:len(good)-1],
		encodeValue("adaptive:api", "b", now, 1.5),
		encodeValue("adaptive:api", "b", now, -0.1),
		encodeValue("adaptive:api", "b", now, math.NaN()),
		encodeValue("adaptive:api", "b", now+int64(time.Hour/time.Millisecond), 0.1),
	} {
		if err := b.ml.SendBestEffort(target, m); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "six drops", func() bool { return a.ValueStats().Dropped == 6 })
	if _, ok := a.LowestValue("adaptive:api", time.Time{}); ok {
		t.Error("a dropped message left a value")
	}
	if d := a.Stats().Dropped; d.Malformed != 0 || d.Absurd != 0 || d.Future != 0 {
		t.Errorf("value messages counted as counter drops: %+v", d)
	}
	if err := a.PublishValue("x", 1.01, time.Now()); err != ErrValueRange {
		t.Errorf("publishing 1.01: %v, want ErrValueRange", err)
	}
	if err := a.PublishValue("", 0.5, time.Now()); err != ErrValueName {
		t.Errorf("publishing an empty name: %v, want ErrValueName", err)
	}
}

// FuzzDecodeValue checks that any input decodes or is refused, never
// panics, and that what decodes is a value in [0, 1] not stamped ahead,
// with names within bounds.
func FuzzDecodeValue(f *testing.F) {
	now := testNow / int64(time.Millisecond)
	f.Add(encodeValue("adaptive:api", "n01", now, 0.25))
	f.Add(encodeValue("adaptive:api", "n01", now, 1.5))
	f.Add(encodeValue("x", "n", now+int64(time.Hour/time.Millisecond), 0))
	f.Add([]byte{wireVersion, kindValue, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		name, node, at, v, err := decodeValue(b, now)
		if err != nil {
			return
		}
		if !(v >= 0 && v <= 1) || at > now+maxAhead.Milliseconds() || at < 0 {
			t.Fatalf("accepted value %v at %d", v, at)
		}
		if len(name) == 0 || len(name) > MaxValueNameLen || len(node) == 0 || len(node) > maxNameLen {
			t.Fatalf("accepted names %q %q", name, node)
		}
	})
}
