package topk

import (
	"bytes"
	"testing"
)

// FuzzSummary feeds a stream of keys (the input split at 0 bytes; keys
// come from clients) to small summaries, one shard and two, with keys
// longer than MaxKeyLen: the Space-Saving bounds hold against exact
// counts, and nothing panics.
func FuzzSummary(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, shards := range []int{1, 2} {
			s, err := New(Config{Counters: 4, Shards: shards, MaxKeyLen: 3})
			if err != nil {
				t.Fatal(err)
			}
			exact := map[string]uint64{}
			for i, k := range bytes.Split(data, []byte{0}) {
				w := uint64(i%3 + 1)
				exact[string(k)] += w
				s.AddBytes(k, w, int64(i))
			}
			var total uint64
			for _, c := range exact {
				total += c
			}
			if s.Total() != total {
				t.Fatalf("Total %d, want %d", s.Total(), total)
			}
			top := s.Top(nil, 0)
			if len(top) > 4 {
				t.Fatalf("%d entries from 4 counters", len(top))
			}
			var sum uint64
			for _, e := range top {
				sum += e.Count
				if len(e.Key) > 3 || e.Error > e.Count {
					t.Fatalf("entry %+v", e)
				}
				// A truncated key stands for one of the keys it starts;
				// its count bounds that key's weight from above.
				found := false
				for k, c := range exact {
					if (k == e.Key || e.Truncated && len(k) > 3 && k[:3] == e.Key) && e.Count >= c && e.Count-e.Error <= c {
						found = true
						break
					}
				}
				if !found {
					t.Fatalf("entry %+v matches no key's exact count in %v", e, exact)
				}
			}
			if sum != total {
				t.Fatalf("counts sum to %d, want the total %d", sum, total)
			}
		}
	})
}
