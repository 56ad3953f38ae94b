package observe

import (
	"fmt"
	"testing"
	"time"
)

// The table keeps at most its bound, drops ended penalties, keeps the
// longest when full, and lists the longest left first.
func TestPenaltiesBoundedLongestFirst(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	p := NewPenalties(3)
	id := func(k string) PenaltyID { return PenaltyID{Rule: "login", Policy: "failed", Key: k} }
	p.Note(id("a"), 10*time.Minute, now)
	p.Note(id("b"), 5*time.Minute, now)
	p.Note(id("c"), time.Minute, now)
	p.Note(id("d"), 30*time.Second, now) // full, ends soonest of all: not kept
	p.Note(id("e"), 15*time.Minute, now) // full: c (ends soonest) goes
	got := p.InForce(nil, now.Add(time.Second))
	want := []string{"e 14m59s", "a 9m59s", "b 4m59s"}
	if len(got) != len(want) {
		t.Fatalf("in force %v; want %v", got, want)
	}
	for i, g := range got {
		if s := fmt.Sprintf("%s %s", g.Key, g.Left); s != want[i] {
			t.Errorf("entry %d: %s; want %s", i, s, want[i])
		}
	}
	// A refusal under the running penalty (less left) does not move
	// its end; a new penalty (more left than the old one) does.
	p.Note(id("a"), 9*time.Minute, now.Add(time.Minute))
	p.Note(id("b"), 20*time.Minute, now.Add(time.Minute))
	got = p.InForce(got[:0], now.Add(6*time.Minute))
	if len(got) != 3 || got[0].Key != "b" || got[0].Left != 15*time.Minute || got[2].Key != "a" || got[2].Left != 4*time.Minute {
		t.Fatalf("after the notes: %v", got)
	}
	// Ended ones are dropped on reading.
	if got = p.InForce(got[:0], now.Add(16*time.Minute)); len(got) != 1 || got[0].Key != "b" {
		t.Fatalf("after 16m: %v; want b alone", got)
	}
	if p.Len() != 1 {
		t.Fatalf("Len %d after the ended were dropped; want 1", p.Len())
	}
	p.Note(id("z"), 0, now) // not a penalty
	if p.Len() != 1 {
		t.Fatal("a zero time left was noted")
	}
}

// A flood of refusals under a known penalty notes it without allocating.
func TestPenaltiesNoteKnownAllocatesNothing(t *testing.T) {
	p := NewPenalties(MaxPenaltiesShown)
	id := PenaltyID{Rule: "login", Policy: "failed", Key: "192.0.2.1"}
	now := time.Now()
	p.Note(id, 15*time.Minute, now)
	if n := testing.AllocsPerRun(1000, func() { p.Note(id, 14*time.Minute, now.Add(time.Minute)) }); n != 0 {
		t.Fatalf("%v allocations per note of a known penalty, want 0", n)
	}
}
