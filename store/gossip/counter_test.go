package gossip

import (
	"math/rand/v2"
	"testing"
)

// The merge steps: each row joins a and b and expects want, both ways.
func TestMergeTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b counter
		want counter
	}{
		{"same window takes each maximum", counter{Win: 5, Cur: 3, Prev: 7}, counter{Win: 5, Cur: 4, Prev: 2}, counter{Win: 5, Cur: 4, Prev: 7}},
		{"adjacent window: the older current is the previous", counter{Win: 6, Cur: 1, Prev: 2}, counter{Win: 5, Cur: 9, Prev: 1}, counter{Win: 6, Cur: 1, Prev: 9}},
		{"adjacent window: a later previous stays", counter{Win: 6, Cur: 1, Prev: 9}, counter{Win: 5, Cur: 4}, counter{Win: 6, Cur: 1, Prev: 9}},
		{"two windows older is forgotten", counter{Win: 7, Cur: 1}, counter{Win: 5, Cur: 100, Prev: 100}, counter{Win: 7, Cur: 1}},
		{"registers merge like counts", counter{Win: 6, MCur: 5, MPrev: 1}, counter{Win: 5, MCur: 8}, counter{Win: 6, MCur: 5, MPrev: 8}},
		{"zero is the identity", counter{Win: 3, Cur: 2, Prev: 1, MCur: 4}, counter{}, counter{Win: 3, Cur: 2, Prev: 1, MCur: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := merge(tc.a, tc.b); got != tc.want {
				t.Errorf("merge(a, b) = %+v, want %+v", got, tc.want)
			}
			if got := merge(tc.b, tc.a); got != tc.want {
				t.Errorf("merge(b, a) = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// randomCounter draws counters of one node's history: nearby windows and
// small counts, so that every case of merge comes up.
func randomCounter(r *rand.Rand) counter {
	return counter{Win: 10 + r.Int64N(4), Cur: r.Int64N(5), Prev: r.Int64N(5), MCur: r.Int64N(3), MPrev: r.Int64N(3)}
}

func TestMergeIsASemilattice(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		a, b, c := randomCounter(r), randomCounter(r), randomCounter(r)
		if merge(a, a) != a {
			t.Fatalf("not idempotent: %+v", a)
		}
		if merge(a, b) != merge(b, a) {
			t.Fatalf("not commutative: %+v, %+v", a, b)
		}
		if merge(merge(a, b), c) != merge(a, merge(b, c)) {
			t.Fatalf("not associative: %+v, %+v, %+v", a, b, c)
		}
		// A merge only grows: merging again what was merged changes nothing.
		if m := merge(a, b); merge(m, a) != m || merge(m, b) != m {
			t.Fatalf("merge of %+v and %+v absorbs neither", a, b)
		}
	}
}

// The truncated merge agrees with the full G-counter (every window kept,
// pointwise maximum) on the two windows it keeps, whatever the order and
// repetition of the messages: a late or duplicated message never counts
// twice.
func TestMergeAgreesWithTheFullGCounter(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		// One node's history: counts only grow, windows only advance.
		var hist []counter
		var c counter
		for range 1 + r.IntN(12) {
			if r.IntN(3) == 0 {
				c.advance(c.Win + 1 + r.Int64N(2))
			}
			c.Cur += r.Int64N(4)
			hist = append(hist, c)
		}
		full := map[int64]int64{}
		for _, h := range hist {
			full[h.Win] = max(full[h.Win], h.Cur)
			full[h.Win-1] = max(full[h.Win-1], h.Prev)
		}
		// Deliver in a random order, with duplicates.
		var got counter
		for range 3 * len(hist) {
			got = merge(got, hist[r.IntN(len(hist))])
		}
		for _, h := range hist {
			got = merge(got, h)
		}
		if got.Win != c.Win || got.Cur != full[c.Win] || got.Prev != full[c.Win-1] {
			t.Fatalf("merged %+v, want window %d: %d, %d (history %+v)", got, c.Win, full[c.Win], full[c.Win-1], hist)
		}
	}
}

// Two partitions' views, merged in any order, add up to what each side
// admitted: nothing counts twice.
func TestViewsOfAPartitionHealWithoutDoubleCounting(t *testing.T) {
	const w = 40
	left := map[int]counter{0: {Win: w, Cur: 30}, 1: {Win: w, Cur: 20, Prev: 5}}
	right := map[int]counter{2: {Win: w, Cur: 25}, 1: {Win: w, Cur: 10}} // an older copy of node 1's
	merged := map[int]counter{}
	for _, side := range []map[int]counter{right, left, right, left} {
		for n, c := range side {
			merged[n] = merge(merged[n], c)
		}
	}
	var v view
	for _, c := range merged {
		v.add(c, w)
	}
	if v.cur != 75 || v.prev != 5 {
		t.Errorf("healed view %d, %d; want 75, 5", v.cur, v.prev)
	}
}
