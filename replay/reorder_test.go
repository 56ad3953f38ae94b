package replay

import (
	"compress/gzip"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/accesslog"
)

// The real log is up to 59 s out of order (see testdata/reference.py,
// which sorts it). With a window wider than any disorder the simulation
// sees it in time order, so moving lines further within their minute
// changes nothing.
func TestReorderWindowRestoresOrder(t *testing.T) {
	raw, err := os.ReadFile("testdata/apache_excerpt.log")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(raw), "\n"), "\n")
	cfg := func() Config {
		return Config{Reorder: 5 * time.Minute, Policies: policies(t, "sliding_log:limit=20,window=30s", "token_bucket:rate=1/s,burst=20")}
	}
	base, err := Run(context.Background(), strings.NewReader(string(raw)), cfg())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	minute := func(l string) string { // "17/May/2015:10:05"
		i := strings.IndexByte(l, '[')
		return l[i+1 : i+18]
	}
	for i := range lines { // local swaps: a few lines apart, same minute
		if j := i + rng.IntN(4); j < len(lines) && minute(lines[i]) == minute(lines[j]) {
			lines[i], lines[j] = lines[j], lines[i]
		}
	}
	for i := range lines {
		if !strings.HasSuffix(lines[i], "\n") {
			lines[i] += "\n"
		}
	}
	rep, err := Run(context.Background(), strings.NewReader(strings.Join(lines, "")), cfg())
	if err != nil {
		t.Fatal(err)
	}
	for i := range base.Policies {
		if a, b := base.Policies[i].Refused, rep.Policies[i].Refused; a != b || a == 0 {
			t.Errorf("%s: %d refused in file order, %d shuffled", base.Policies[i].Name, a, b)
		}
	}
	if rep.Input.Late != 0 {
		t.Errorf("%d late", rep.Input.Late)
	}
	// Without the window the same file's disorder is visible: requests
	// arrive "late" and are clamped.
	noWindow := cfg()
	noWindow.Reorder = -1
	rep, err = Run(context.Background(), strings.NewReader(string(raw)), noWindow)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Input.Late == 0 || rep.Input.LateMax < 30*time.Second {
		t.Errorf("without reordering: %d late, at most %v; want many, up to ~59s", rep.Input.Late, rep.Input.LateMax)
	}
}

func TestReordererOrderAndLateness(t *testing.T) {
	sim := newSimulator(policies(t, "fixed_window:limit=1000,window=1h"), nil, "", false, nil, 0, 10)
	var got []int64
	r := &reorderer{window: 10, sink: sim}
	sim.intern([]byte("k"))
	// Times, with 2 arriving after their instant was released (late).
	in := []int64{100, 95, 104, 99, 111, 90, 120, 108, 130, 131, 125, 140}
	for _, tm := range in {
		r.push(tm, 0, 1, nil)
		for sim.events > int64(len(got)) {
			got = append(got, sim.now)
		}
	}
	r.flush()
	for sim.events > int64(len(got)) {
		got = append(got, sim.now)
	}
	// 90 arrives after 111 has released everything up to 101: it is late,
	// and clamped to the last released time.
	for i := 1; i < len(got); i++ {
		if got[i] < got[i-1] {
			t.Fatalf("released out of order: %v", got)
		}
	}
	if len(got) != len(in) {
		t.Fatalf("released %d of %d", len(got), len(in))
	}
	if r.late == 0 {
		t.Errorf("no late events in %v → %v", in, got)
	}
}

func TestKeysAndFilters(t *testing.T) {
	log := strings.Join([]string{
		`2001:db8:1:2:aaaa::1 - - [17/May/2015:10:05:03 +0000] "GET /api/a HTTP/1.1" 200 1`,
		`2001:db8:1:2:bbbb::9 - - [17/May/2015:10:05:03 +0000] "GET /api/b HTTP/1.1" 200 1`,
		`[2001:db8:1:3::1]:443 - - [17/May/2015:10:05:03 +0000] "POST /api/a HTTP/1.1" 500 1`,
		`192.0.2.1:5555 - bob [17/May/2015:10:05:03 +0000] "GET /static/x HTTP/1.1" 404 1`,
		`192.0.2.1 - bob [17/May/2015:10:05:04 +0000] "get /api/a HTTP/1.1" 201 1`,
	}, "\n")
	run := func(key string, prefix int, f Filter) *Report {
		t.Helper()
		k := mustKey(t, key)
		k.IPv6Prefix = prefix
		rep, err := Run(context.Background(), strings.NewReader(log), Config{
			Key: k, Filter: f, Policies: policies(t, "fixed_window:limit=100,window=1m"),
		})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	keys := func(rep *Report) map[string]int64 {
		m := map[string]int64{}
		for _, b := range rep.Busiest {
			m[b.Key] = b.Requests
		}
		return m
	}
	got := keys(run("ip", 0, Filter{}))
	if got["2001:db8:1:2::/64"] != 2 || got["2001:db8:1:3::/64"] != 1 || got["192.0.2.1"] != 2 || len(got) != 3 {
		t.Errorf("ip keys (IPv6 /64): %v", got)
	}
	got = keys(run("ip", 128, Filter{}))
	if got["2001:db8:1:2:aaaa::1"] != 1 || len(got) != 4 {
		t.Errorf("ip keys (IPv6 whole): %v", got)
	}
	got = keys(run("ip", 48, Filter{}))
	if got["2001:db8:1::/48"] != 3 {
		t.Errorf("ip keys (IPv6 /48): %v", got)
	}
	got = keys(run("user,path", 0, Filter{}))
	if got["-|/api/a"] != 2 || got["bob|/api/a"] != 1 || got["bob|/static/x"] != 1 {
		t.Errorf("user,path keys: %v", got)
	}
	got = keys(run("method,status", 0, Filter{}))
	if got["GET|200"] != 2 || got["POST|500"] != 1 {
		t.Errorf("method,status keys: %v", got)
	}
	got = keys(run("all", 0, Filter{}))
	if got["*"] != 5 {
		t.Errorf("all: %v", got)
	}
	rep := run("ip", 0, Filter{PathPrefixes: []string{"/api/"}, Methods: []string{"GET"}, Statuses: []string{"2xx"}})
	if rep.Input.Simulated != 3 || rep.Input.Filtered != 2 {
		t.Errorf("filter: %d simulated, %d filtered; want 3, 2", rep.Input.Simulated, rep.Input.Filtered)
	}
	if err := (Filter{Statuses: []string{"5x"}}).Validate(); err == nil {
		t.Error("status filter 5x accepted")
	}
	if _, err := ParseKeySpec("ip,bogus"); err == nil {
		t.Error("key part bogus accepted")
	}
	if _, err := Run(context.Background(), strings.NewReader(log), Config{
		Key: mustKey(t, "field:x"), Policies: policies(t, "fixed_window:limit=1,window=1s")}); err == nil {
		t.Error("field: key accepted for a combined log")
	}
}

// repeatReader yields line n times, generated as it is read: a large
// input without a large file or buffer.
type repeatReader struct {
	line []byte
	n    int // lines left
	off  int // offset in the current line
}

func (r *repeatReader) Read(p []byte) (int, error) {
	k := 0
	for k < len(p) && r.n > 0 {
		c := copy(p[k:], r.line[r.off:])
		k += c
		if r.off += c; r.off == len(r.line) {
			r.off, r.n = 0, r.n-1
		}
	}
	if k == 0 {
		return 0, io.EOF
	}
	return k, nil
}

// liveHeap returns the bytes of live heap objects, after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A log whose lines all carry one timestamp never leaves the reordering
// window by time: it must be bounded by lines, so that memory stays flat
// whatever the input's length, plain or gzipped (whose expansion is then
// harmless: it is read as a stream).
func TestReorderWindowMemoryIsBoundedByLines(t *testing.T) {
	const lines = 1_000_000
	line := []byte(`192.0.2.7 - - [17/May/2015:10:05:03 +0000] "GET /api/x HTTP/1.1" 200 5 "-" "curl/8"` + "\n")
	pr, pw := io.Pipe()
	defer pr.Close() // unblocks the writer if Run stops early
	go func() {
		zw, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
		_, err := io.Copy(zw, &repeatReader{line: line, n: lines})
		if err == nil {
			err = zw.Close()
		}
		pw.CloseWithError(err)
	}()
	base := liveHeap()
	var peak uint64
	cfg := Config{Policies: policies(t, "fixed_window:limit=100,window=1m"),
		Progress: func(int64) { peak = max(peak, liveHeap()) }}
	rep, err := Run(context.Background(), pr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Input.Simulated != lines {
		t.Fatalf("simulated %d of %d", rep.Input.Simulated, lines)
	}
	// The window holds DefaultReorderLines lines of some 40 bytes each,
	// about 10 MB; the million would be 40 MB and more.
	if grew := int64(peak) - int64(base); grew > 24<<20 {
		t.Errorf("live heap grew by %d MB while reading %d lines of one timestamp", grew>>20, lines)
	}
	if rep.Input.ReorderFull != lines-DefaultReorderLines {
		t.Errorf("%d requests released early; want %d", rep.Input.ReorderFull, lines-DefaultReorderLines)
	}
}

// The bound holds exactly: never more than ReorderLines lines wait, the
// lines it pushes out early are counted, and a straggler that arrives
// after them is late, as it would be after a window's worth of time.
func TestReorderWindowHoldsAtMostReorderLines(t *testing.T) {
	cfg := Config{ReorderLines: 1000, Policies: policies(t, "fixed_window:limit=100000,window=1h")}
	if err := cfg.defaults(); err != nil {
		t.Fatal(err)
	}
	p, err := newPipeline(&cfg, accesslog.FormatCSV)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(0)
	feed := func(s string) { n++; p.line(n, []byte(s)) }
	for range 50_000 {
		feed("2015-05-17T10:05:03Z,k")
	}
	feed("2015-05-17T10:05:02Z,k") // a second out of order: within the window's time, not its lines
	p.finish()
	if p.reo.peak > 1000+1 {
		t.Errorf("%d lines queued at once; want at most 1001", p.reo.peak)
	}
	if p.sim.events != 50_001 || p.reo.early != 50_001-1000 {
		t.Errorf("simulated %d, released early %d; want 50001 and 49001", p.sim.events, p.reo.early)
	}
	if p.reo.late != 1 || p.reo.lateMax != int64(time.Second) || p.reo.shiftMax != int64(time.Second) {
		t.Errorf("late %d (out of order by %v, moved by %v); want 1, by 1s, 1s", p.reo.late,
			time.Duration(p.reo.lateMax), time.Duration(p.reo.shiftMax))
	}
}

// A line an hour older than the newest line read before it is an hour out
// of order, whatever the time it is then simulated at; the report says
// both.
func TestLatenessIsMeasuredFromTheNewestLineRead(t *testing.T) {
	log := "2015-05-17T10:00:00Z,a\n2015-05-17T10:00:04Z,a\n2015-05-17T11:00:00Z,a\n2015-05-17T10:00:00Z,a\n"
	rep := runBounded(t, log)
	in := rep.Input
	if in.Late != 1 || in.LateMax != time.Hour || in.LateShift != 4*time.Second {
		t.Errorf("late %d, out of order by %v, moved by %v; want 1, 1h, 4s", in.Late, in.LateMax, in.LateShift)
	}
	var b strings.Builder
	if err := WriteText(&b, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "up to 1h0m0s out of order") || !strings.Contains(b.String(), "up to 4s after their own time") {
		t.Errorf("text report does not say how far out of order:\n%s", b.String())
	}
}
