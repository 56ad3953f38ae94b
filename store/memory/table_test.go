package memory

import (
	"math/rand/v2"
	"testing"

	"github.com/tollgate-dev/tollgate/limit"
)

// TestTableMatchesMap drives the table and a Go map with the same random
// puts and removes (with hashes crowded into few home slots, so probe runs
// wrap and deletions shift, and random eviction marks beside the keys) and
// checks they always agree.
func TestTableMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	var tab table
	ref := map[uint64]limit.State{}
	marks := map[uint64]mark{}
	for step := range 200_000 {
		h := tableKey(r.Uint64N(3000) << 20) // low 32 bits vary little
		if r.IntN(3) == 0 {
			h = tableKey(r.Uint64())
		}
		switch r.IntN(4) {
		case 0:
			tab.remove(h)
			delete(ref, h)
		default:
			st := limit.State{A: int64(step), Idle: int64(step)}
			m := mark(r.IntN(256))
			tab.put(h, st, m)
			ref[h], marks[h] = st, m
		}
		if step%997 == 0 {
			tab.shrink()
		}
		if tab.n != len(ref) {
			t.Fatalf("step %d: table has %d, map %d", step, tab.n, len(ref))
		}
	}
	for h, want := range ref {
		if got, ok := tab.get(h); !ok || got != want {
			t.Fatalf("get(%x) = %v, %v; want %v", h, got, ok, want)
		}
		if got := tab.slots[tab.find(h)].mark(); got != marks[h] {
			t.Fatalf("mark of %x = %#x; want %#x", h, got, marks[h])
		}
	}
	for h := range ref {
		tab.remove(h)
	}
	tab.shrink()
	if tab.n != 0 || len(tab.slots) != minSlots {
		t.Fatalf("emptied table: n=%d, %d slots", tab.n, len(tab.slots))
	}
}
