package topk

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/racebuild"
)

// checkBounds asserts Space-Saving's guarantees against exact counts: every
// entry's count is within [true, true+Error], every Error is at most the
// shard's N/k, and every key heavier than Bound is tracked.
func checkBounds(t *testing.T, s *Summary, exact map[string]uint64, k int) {
	t.Helper()
	var total uint64
	for _, c := range exact {
		total += c
	}
	if got := s.Total(); got != total {
		t.Fatalf("Total = %d, want %d", got, total)
	}
	top := s.Top(nil, 0)
	tracked := map[string]bool{}
	// One shard: the bound is N/k exactly.
	maxErr := total / uint64(k)
	for _, e := range top {
		tracked[e.Key] = true
		tr := exact[e.Key]
		if e.Count < tr || e.Count-e.Error > tr {
			t.Errorf("%s: count %d error %d, true %d: outside [true, true+error]", e.Key, e.Count, e.Error, tr)
		}
		if len(s.shards) == 1 && e.Error > maxErr {
			t.Errorf("%s: error %d above N/k = %d", e.Key, e.Error, maxErr)
		}
	}
	b := s.Bound()
	if len(s.shards) == 1 && b > maxErr {
		t.Errorf("Bound %d above N/k = %d", b, maxErr)
	}
	for key, c := range exact {
		if c > b && !tracked[key] {
			t.Errorf("%s: true weight %d above the bound %d but not tracked", key, c, b)
		}
	}
}

// readClients returns the client address of every line of the shipped
// access log, in order.
func readClients(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../replay/testdata/apache_combined_10k.log.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var ips []string
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		ip, _, _ := strings.Cut(sc.Text(), " ")
		ips = append(ips, ip)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(ips) != 10000 {
		t.Fatalf("read %d lines, want 10000", len(ips))
	}
	return ips
}

// TestTop20OfTheShippedLogWithinTheBound counts the 10,000 requests of
// replay/testdata's real log (1,753 clients) with 256 counters (the
// gateway's default): the reported top 20 agree with the exact counts
// within each entry's error, every error within N/k = 39, and no true
// top-20 client is missing unless its weight is within the 20th count.
func TestTop20OfTheShippedLogWithinTheBound(t *testing.T) {
	ips := readClients(t)
	const k = 256
	s, err := New(Config{Counters: k})
	if err != nil {
		t.Fatal(err)
	}
	exact := map[string]uint64{}
	for _, ip := range ips {
		exact[ip]++
		s.Add(ip, 1, 0)
	}
	checkBounds(t, s, exact, k)

	type kc struct {
		key string
		n   uint64
	}
	var want []kc
	for key, n := range exact {
		want = append(want, kc{key, n})
	}
	slices.SortFunc(want, func(a, b kc) int {
		if a.n != b.n {
			return int(b.n) - int(a.n)
		}
		return strings.Compare(a.key, b.key)
	})
	top := s.Top(nil, 20)
	if len(top) != 20 {
		t.Fatalf("Top(20) returned %d", len(top))
	}
	same := 0
	for i, e := range top {
		if e.Key == want[i].key {
			same++
		}
		// Ranked above means counted at least as much: the true weights
		// can be out of order by no more than the error.
		for _, f := range top[i+1:] {
			if exact[e.Key]+e.Error < exact[f.Key] {
				t.Errorf("%s (true %d, error %d) ranked above %s (true %d)", e.Key, exact[e.Key], e.Error, f.Key, exact[f.Key])
			}
		}
	}
	in := map[string]bool{}
	for _, e := range top {
		in[e.Key] = true
	}
	last := top[19]
	missing := 0
	for _, w := range want[:20] {
		if !in[w.key] {
			missing++
			if w.n > last.Count {
				t.Errorf("true top-20 client %s (%d) missing though heavier than rank 20's count %d", w.key, w.n, last.Count)
			}
		}
	}
	t.Logf("N=%d k=%d N/k=%d bound=%d; %d of 20 ranks exact, %d true top-20 clients outside the reported 20; rank 20 %s count %d error %d (true %d)",
		s.Total(), k, s.Total()/k, s.Bound(), same, missing, last.Key, last.Count, last.Error, exact[last.Key])
}

// TestBoundsOnSkewedRandomStreams checks the guarantees on Zipf-distributed
// weighted streams, with one shard and with several.
func TestBoundsOnSkewedRandomStreams(t *testing.T) {
	for _, shards := range []int{1, 4} {
		for seed := uint64(1); seed <= 5; seed++ {
			t.Run(fmt.Sprintf("shards=%d/seed=%d", shards, seed), func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, 7))
				z := rand.NewZipf(r, 1.2, 1, 5000)
				const k = 32
				s, err := New(Config{Counters: k, Shards: shards})
				if err != nil {
					t.Fatal(err)
				}
				exact := map[string]uint64{}
				for range 20000 {
					key := "k" + strconv.FormatUint(z.Uint64(), 10)
					w := uint64(1 + r.IntN(3))
					exact[key] += w
					s.Add(key, w, 0)
				}
				checkBounds(t, s, exact, k)
			})
		}
	}
}

// TestLongKeysAreToldApartAndTruncated: keys longer than MaxKeyLen that
// share their first bytes are separate counters, returned truncated.
func TestLongKeysAreToldApartAndTruncated(t *testing.T) {
	s, _ := New(Config{Counters: 8, MaxKeyLen: 4})
	s.Add("abcdef", 3, 1)
	s.Add("abcdXY", 2, 2)
	s.Add("abc", 1, 3)
	s.Add("abcdef", 1, 4)
	top := s.Top(nil, 0)
	want := []Entry{
		{Key: "abcd", Truncated: true, Count: 4, Tag: 4},
		{Key: "abcd", Truncated: true, Count: 2, Tag: 2},
		{Key: "abc", Count: 1, Tag: 3},
	}
	if !slices.Equal(top, want) {
		t.Fatalf("Top = %+v, want %+v", top, want)
	}
}

// TestNewKeyTakesTheSmallestCounter pins the algorithm's step: the new key
// inherits the smallest count as its error.
func TestNewKeyTakesTheSmallestCounter(t *testing.T) {
	s, _ := New(Config{Counters: 2})
	s.Add("a", 5, 0)
	s.Add("b", 2, 0)
	s.Add("c", 1, 9)
	top := s.Top(nil, 0)
	want := []Entry{{Key: "a", Count: 5}, {Key: "c", Count: 3, Error: 2, Tag: 9}}
	if !slices.Equal(top, want) {
		t.Fatalf("Top = %+v, want %+v", top, want)
	}
	if s.Bound() != 3 {
		t.Fatalf("Bound = %d, want 3", s.Bound())
	}
	s.Reset()
	if top := s.Top(nil, 0); len(top) != 0 || s.Total() != 0 {
		t.Fatalf("after Reset: %+v, total %d", top, s.Total())
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{{Counters: -1}, {Shards: 3}, {Counters: 2, Shards: 4}, {MaxKeyLen: 70000}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		}
	}
}

// TestAddAllocatesNothing: neither a known key nor a new one allocates.
func TestAddAllocatesNothing(t *testing.T) {
	s, _ := New(Config{Counters: 64, Shards: 4})
	buf := make([]byte, 0, 32)
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		s.Add("hot", 1, 7)
		i++
		buf = strconv.AppendInt(buf[:0], int64(i), 10)
		s.AddBytes(buf, 1, 0)
	}); n != 0 {
		t.Fatalf("Add allocates %.1f times", n)
	}
}

// TestMemoryFixedUnderTenMillionKeys floods a summary with ten million
// distinct keys: the heap does not grow, and the hot key stays on top.
func TestMemoryFixedUnderTenMillionKeys(t *testing.T) {
	n := 10_000_000
	if testing.Short() || racebuild.Enabled {
		n = 200_000
	}
	s, _ := New(Config{Counters: 256, Shards: 4})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	buf := make([]byte, 0, 32)
	for i := range n {
		buf = strconv.AppendInt(append(buf[:0], "client-"...), int64(i), 10)
		s.AddBytes(buf, 1, 0)
		if i%4 == 0 {
			s.Add("hot", 1, 0)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if grew > 64<<10 {
		t.Errorf("heap grew by %d bytes over %d distinct keys", grew, n)
	}
	if allocs := after.Mallocs - before.Mallocs; allocs > 1000 {
		t.Errorf("%d allocations over %d distinct keys", allocs, n)
	}
	if top := s.Top(nil, 1); top[0].Key != "hot" {
		t.Errorf("top = %+v, want hot", top)
	}
	t.Logf("%d keys: heap %+d bytes, %d mallocs", n, grew, after.Mallocs-before.Mallocs)
}

func BenchmarkAddHotKey(b *testing.B) {
	s, _ := New(Config{Counters: 256, Shards: 4})
	b.ReportAllocs()
	for b.Loop() {
		s.Add("203.0.113.9", 1, 5)
	}
}

func BenchmarkAddDistinctKeys(b *testing.B) {
	s, _ := New(Config{Counters: 256, Shards: 4})
	buf := make([]byte, 0, 32)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		buf = strconv.AppendInt(buf[:0], int64(i), 10)
		s.AddBytes(buf, 1, 0)
	}
}

func BenchmarkAddParallel(b *testing.B) {
	s, _ := New(Config{Counters: 256, Shards: 4})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(1, 2))
		keys := make([]string, 1000)
		for i := range keys {
			keys[i] = "10.0." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256)
		}
		for pb.Next() {
			s.Add(keys[r.IntN(len(keys))], 1, 0)
		}
	})
}

// The peer: exact counting in a map, the naive way to find heavy hitters.
// Its memory grows with every new key; a summary's never does.
func BenchmarkExactMapHotKey(b *testing.B) {
	var mu sync.Mutex
	m := map[string]uint64{}
	b.ReportAllocs()
	for b.Loop() {
		mu.Lock()
		m["203.0.113.9"]++
		mu.Unlock()
	}
}

func BenchmarkExactMapDistinctKeys(b *testing.B) {
	var mu sync.Mutex
	m := map[string]uint64{}
	buf := make([]byte, 0, 32)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		buf = strconv.AppendInt(buf[:0], int64(i), 10)
		mu.Lock()
		m[string(buf)]++
		mu.Unlock()
	}
}

// Summaries sharing a seed take one Hash; AddHashed counts as Add does.
func TestAddHashedSharesTheHash(t *testing.T) {
	a, _ := New(Config{Counters: 8, Shards: 2})
	b, _ := New(Config{Counters: 8, Shards: 2, SeedOf: a})
	for _, k := range []string{"x", "y", "x", "z", "x"} {
		h := a.Hash(k)
		a.AddHashed(h, k, 1, 0)
		b.AddHashed(h, k, 2, 0)
		if h != b.Hash(k) {
			t.Fatalf("hashes differ for %q", k)
		}
	}
	b.Add("x", 1, 0) // Add and AddHashed meet on one counter
	if top := b.Top(nil, 1); top[0].Key != "x" || top[0].Count != 7 {
		t.Fatalf("b top %+v", top)
	}
	if top := a.Top(nil, 1); top[0].Key != "x" || top[0].Count != 3 {
		t.Fatalf("a top %+v", top)
	}
}
