package replay

import (
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/accesslog"
)

// syntheticLines returns n combined-format lines, perSec per second from
// the cycle'th multiple of n lines on, from keys distinct clients.
func syntheticLines(n, keys, perSec, cycle int) [][]byte {
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	out := make([][]byte, n)
	for i := range out {
		j := cycle*n + i
		t := start.Add(time.Duration(j) * time.Second / time.Duration(perSec))
		out[i] = fmt.Appendf(nil, `10.1.%d.%d - - [%s] "GET /api/items/%d?page=2 HTTP/1.1" 200 512 "-" "bench/1.0"`,
			(j%keys)/256, (j%keys)%256, t.Format("02/Jan/2006:15:04:05 -0700"), j%7)
	}
	return out
}

// The per-line path (parse, filter, key, reorder, five policies and the
// sliding window's exact shadow, suggestions, statistics) allocates
// nothing once a key has been seen and the buffers have grown.
func TestLinePathDoesNotAllocate(t *testing.T) {
	cfg := Config{
		Suggest:  true,
		Filter:   Filter{PathPrefixes: []string{"/api/"}, Methods: []string{"GET"}},
		Policies: fivePolicies(t),
	}
	if err := cfg.defaults(); err != nil {
		t.Fatal(err)
	}
	p, err := newPipeline(&cfg, accesslog.FormatCombined)
	if err != nil {
		t.Fatal(err)
	}
	lines := syntheticLines(4096, 300, 4, 0)
	n := int64(0)
	next := func() {
		p.line(n, lines[n%int64(len(lines))])
		n++
	}
	for range 3 * len(lines) {
		next()
	}
	if a := testing.AllocsPerRun(2000, next); a != 0 {
		t.Errorf("%v allocations per line, want 0", a)
	}
	if p.in.Malformed != 0 || p.sim.events == 0 {
		t.Fatalf("malformed %d, simulated %d", p.in.Malformed, p.sim.events)
	}
}

func fivePolicies(t testing.TB) []Policy {
	return policies(t,
		"token_bucket:rate=10/s,burst=20",
		"leaky_bucket:rate=10/s,burst=10,mode=police",
		"fixed_window:limit=100,window=1m",
		"sliding_window:limit=100,window=1m",
		"sliding_log:limit=100,window=1m",
	)
}

// BenchmarkLine measures the per-line path on in-memory lines.
func BenchmarkLine(b *testing.B) {
	cfg := Config{Policies: fivePolicies(b)}
	if err := cfg.defaults(); err != nil {
		b.Fatal(err)
	}
	p, err := newPipeline(&cfg, accesslog.FormatCombined)
	if err != nil {
		b.Fatal(err)
	}
	// 1,000 lines a second from 5,000 clients; time runs on from one
	// batch of lines to the next.
	const batch = 1 << 16
	lines := syntheticLines(batch, 5000, 1000, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i > 0 && i%batch == 0 {
			b.StopTimer()
			lines = syntheticLines(batch, 5000, 1000, i/batch)
			b.StartTimer()
		}
		p.line(int64(i), lines[i%batch])
	}
}

// An IPv6 client's line (its key the /64 prefix, the address written bare
// or bracketed with a port) allocates nothing either: the address is
// parsed from the line's bytes, not from a copy.
func TestIPv6LinePathDoesNotAllocate(t *testing.T) {
	cfg := Config{Policies: fivePolicies(t)}
	if err := cfg.defaults(); err != nil {
		t.Fatal(err)
	}
	p, err := newPipeline(&cfg, accesslog.FormatCombined)
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{"2001:db8:0:3::1a", "[2001:db8::1]:443", "::ffff:10.1.2.3"} {
		line := []byte(addr + ` - - [29/Nov/2026:00:00:00 +0200] "GET / HTTP/1.1" 200 1 "-" "x"`)
		n := int64(0)
		next := func() { p.line(n, line); n++ }
		for range 100 {
			next()
		}
		if a := testing.AllocsPerRun(1000, next); a != 0 {
			t.Errorf("%s: %v allocations per line, want 0", addr, a)
		}
	}
	if p.in.Malformed != 0 {
		t.Fatalf("%d malformed lines", p.in.Malformed)
	}
}
