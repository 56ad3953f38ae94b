// Command flood pushes a flood of distinct client addresses through a real
// tollgate gateway while one client sends at a steady rate far over its
// limit, and reports whether that client's admitted count stays exact and
// how much memory the gateway took against its configured key cap.
//
// It builds ../cmd/tollgate, writes a configuration shaped as
// examples/per-ip-api.yaml (a per-IP token bucket 10/s burst 20 and a
// sliding window 100000/1h, the proxy at 127.0.0.1 trusted for
// X-Forwarded-For, the in-memory store capped at -max-keys) and runs
// `tollgate serve -config` on it, bound to 127.0.0.1. The flood sends one
// request per address (X-Forwarded-For 10.x.y.z, each used once) over a
// few pipelined connections; the steady client sends every 20 ms on its
// own connection. It is outside CI (10M requests take minutes); the CI-sized
// version is store/memory's TestRuleFloodKeepsALimitedClientExact.
//
//	cd bench && go run ./flood -keys 10000000 -max-time 10m
//
// The exact figure: a client sending faster than the token bucket's rate,
// from an idle state and with no pause as long as the burst takes to
// refill, is admitted burst + floor(D × rate) times, D being the time
// between its first and last request. The client stops at a D 40 ms past a
// multiple of the 100 ms interval, so that scheduling jitter below 40 ms
// cannot move the floor.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

const (
	burst    = 20
	interval = 100 * time.Millisecond // token bucket 10/s
	step     = 20 * time.Millisecond  // the steady client's 50 requests a second
	// bytesPerKey bounds the store's table per key: 32-byte slots kept at
	// least 64% full after growth (store/memory's package documentation).
	bytesPerKey = 50
)

func main() {
	keys := flag.Int("keys", 10_000_000, "distinct flood addresses (one request each, at most 16,777,216)")
	maxKeys := flag.Int("max-keys", 1_000_000, "the gateway's store.memory.max_keys")
	conns := flag.Int("conns", 4, "flood connections")
	depth := flag.Int("pipeline", 128, "requests in flight per flood connection")
	maxTime := flag.Duration("max-time", 10*time.Minute, "stop the flood after this long, whatever -keys says")
	repo := flag.String("repo", "..", "the tollgate repository (to build cmd/tollgate)")
	profile := flag.String("heap-profile", "", "write the gateway's heap profile (after a GC) at the end to this file")
	flag.Parse()
	if *keys < 1 || *keys > 1<<24 || *maxKeys < 1 || *conns < 1 || *depth < 1 {
		fmt.Fprintln(os.Stderr, "flood: -keys must be in [1, 16777216]; -max-keys, -conns and -pipeline positive")
		os.Exit(2)
	}
	ok, err := run(*keys, *maxKeys, *conns, *depth, *maxTime, *repo, *profile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

const configTemplate = `listen:
  addr: "127.0.0.1:0"
admin:
  addr: "127.0.0.1:0"
reload:
  watch: false
routes:
  - path: /
    upstream: demo
store:
  memory:
    max_keys: %d
client_ip:
  trusted_proxies: [127.0.0.1]
  header: X-Forwarded-For
headers:
  styles: [draft10]
rules:
  - name: api-per-ip
    key: ip
    policies:
      - name: per-second
        algorithm: token_bucket
        rate: 10/s
        burst: %d
      - name: per-hour
        algorithm: sliding_window
        limit: 100000
        window: 1h
`

var servingRE = regexp.MustCompile(`msg=serving traffic=(\S+) admin=(\S+)`)

func run(keys, maxKeys, conns, depth int, maxTime time.Duration, repo, profile string) (bool, error) {
	dir, err := os.MkdirTemp("", "tollgate-flood-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "tollgate")
	build := exec.Command("go", "build", "-o", bin, "./cmd/tollgate")
	build.Dir, build.Stdout, build.Stderr = repo, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return false, fmt.Errorf("build: %w", err)
	}
	cfgFile := filepath.Join(dir, "flood.yaml")
	if err := os.WriteFile(cfgFile, fmt.Appendf(nil, configTemplate, maxKeys, burst), 0o644); err != nil {
		return false, err
	}
	gw, err := startGateway(bin, cfgFile)
	if err != nil {
		return false, err
	}
	defer gw.stop()
	fmt.Printf("gateway pid %d on %s (admin %s), store.memory.max_keys %d\n", gw.cmd.Process.Pid, gw.addr, gw.admin, maxKeys)

	time.Sleep(time.Second) // let it settle before the baseline
	baseline, _ := procStatus(gw.cmd.Process.Pid, "VmRSS")

	// VmRSS every 250 ms: the peak, and the peak within each tenth of
	// the flood, to show where it levels off. VmHWM is read at the end.
	var next atomic.Int64 // flood addresses handed out
	var peak atomic.Int64
	byTenth := make([]int64, 10)
	stopSampling := make(chan struct{})
	var sampling sync.WaitGroup
	sampling.Go(func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
			}
			rss, err := procStatus(gw.cmd.Process.Pid, "VmRSS")
			if err != nil {
				continue
			}
			if rss > peak.Load() {
				peak.Store(rss)
			}
			if n := next.Load(); n > 0 {
				i := min(int(n*10/int64(keys)), 9)
				byTenth[i] = max(byTenth[i], rss)
			}
		}
	})

	floodDone := make(chan struct{})
	steadyRes := make(chan steadyResult, 1)
	go func() { steadyRes <- steady(gw.addr, floodDone) }()
	time.Sleep(time.Second) // the steady client is limited before the flood starts

	start := time.Now()
	fl := flood(gw.addr, &next, keys, conns, depth, start.Add(maxTime))
	elapsed := time.Since(start)
	close(floodDone)
	st := <-steadyRes
	close(stopSampling)
	sampling.Wait()
	hwm, _ := procStatus(gw.cmd.Process.Pid, "VmHWM")
	live := scrape(gw.admin, "tollgate_store_live_keys")
	heap := liveHeap(gw.admin, profile)

	fmt.Printf("flood: %d distinct addresses, one request each, in %v (%.0f/s) over %d connections, %d in flight each%s\n",
		fl.sent, elapsed.Round(time.Millisecond), float64(fl.sent)/elapsed.Seconds(), conns, depth, map[bool]string{true: "", false: fmt.Sprintf(" (stopped at -max-time; -keys asked %d)", keys)}[fl.sent == keys])
	fmt.Printf("flood responses: %v\n", fl.statuses)
	if fl.err != nil {
		fmt.Printf("flood error: %v\n", fl.err)
	}
	want := burst + int(st.span/interval)
	fmt.Printf("steady client: %d requests over %v (largest gap between requests %v, slowest response %v), %d admitted, %d refused, %d other %v\n",
		st.sent, st.span, st.maxGap.Round(time.Millisecond), st.maxWait.Round(time.Millisecond), st.admitted, st.refused, st.other, st.otherCodes)
	fmt.Printf("steady client exact figure: burst %d + floor(%v / %v) = %d; admitted %d (%+d)\n",
		burst, st.span, interval, want, st.admitted, st.admitted-want)
	// With a pause longer than the burst takes to refill (a stall of
	// either process on a loaded machine) the closed formula no longer
	// holds: the token bucket itself, run on the instants the requests
	// were sent and on those their responses came back, says what an
	// exact limiter admits; the gateway decided each somewhere between.
	atSend, atRecv := reference(st.sends), reference(st.recvs)
	fmt.Printf("the token bucket itself (package limit) on the send instants admits %d, on the response instants %d\n", atSend, atRecv)
	if st.err != nil {
		fmt.Printf("steady client error: %v\n", st.err)
	}
	capBytes := int64(maxKeys) * bytesPerKey
	fmt.Printf("gateway RSS: %.1f MiB before the flood, peak %.1f MiB (VmHWM; sampled peak %.1f MiB), growth %.1f MiB; the store's cap %d keys x %d B = %.1f MiB\n",
		mib(baseline), mib(hwm), mib(peak.Load()), mib(hwm-baseline), maxKeys, bytesPerKey, mib(capBytes))
	fmt.Print("peak RSS by tenth of the flood (MiB):")
	for _, b := range byTenth {
		fmt.Printf(" %.0f", mib(b))
	}
	fmt.Println()
	fmt.Printf("at the end: live keys %s, live heap after a GC %s\n", live, heap)
	fmt.Printf("gateway log: %d lines", gw.lines())
	if e := gw.errorLines(); e > 0 {
		fmt.Printf(", %d at level ERROR or WARN", e)
	}
	fmt.Println()
	exact := st.err == nil && (st.admitted == want && st.maxGap < time.Duration(burst)*interval ||
		min(atSend, atRecv) <= st.admitted && st.admitted <= max(atSend, atRecv))
	fmt.Printf("result: admitted count %s\n", map[bool]string{true: "exact", false: "NOT exact"}[exact])
	return exact && fl.err == nil, nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// gateway is a running tollgate serve.
type gateway struct {
	cmd         *exec.Cmd
	addr, admin string
	mu          sync.Mutex
	nLines      int
	nErrors     int
	done        chan struct{}
}

func startGateway(bin, cfg string) (*gateway, error) {
	g := &gateway{cmd: exec.Command(bin, "serve", "-config", cfg), done: make(chan struct{})}
	stderr, err := g.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	g.cmd.Stdout = io.Discard
	if err := g.cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan [2]string, 1)
	go func() {
		defer close(g.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			g.mu.Lock()
			g.nLines++
			if strings.Contains(line, "level=ERROR") || strings.Contains(line, "level=WARN") {
				if g.nErrors++; g.nErrors <= 5 {
					fmt.Fprintln(os.Stderr, "gateway:", line)
				}
			}
			g.mu.Unlock()
			if m := servingRE.FindStringSubmatch(line); m != nil {
				ready <- [2]string{m[1], m[2]}
			}
		}
		g.cmd.Wait()
	}()
	select {
	case a := <-ready:
		g.addr, g.admin = a[0], a[1]
		return g, nil
	case <-g.done:
		return nil, errors.New("the gateway exited before serving")
	case <-time.After(60 * time.Second):
		g.cmd.Process.Kill()
		return nil, errors.New("the gateway did not start within 60s")
	}
}

func (g *gateway) stop() {
	g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.done:
	case <-time.After(30 * time.Second):
		g.cmd.Process.Kill()
		<-g.done
	}
}

func (g *gateway) lines() int      { g.mu.Lock(); defer g.mu.Unlock(); return g.nLines }
func (g *gateway) errorLines() int { g.mu.Lock(); defer g.mu.Unlock(); return g.nErrors }

// procStatus reads a "kB" field of /proc/PID/status, in bytes.
func procStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// liveHeap returns HeapAlloc after a GC, from the admin listener's heap
// profile, and saves the profile to file if it is not empty.
func liveHeap(admin, file string) string {
	if file != "" {
		if resp, err := http.Get("http://" + admin + "/debug/pprof/heap?gc=1"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			os.WriteFile(file, b, 0o644)
		}
	}
	resp, err := http.Get("http://" + admin + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapAlloc = "); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return fmt.Sprintf("%.1f MiB", mib(n))
			}
		}
	}
	return "unknown"
}

// scrape returns a metric's value from the admin listener's /metrics.
func scrape(admin, name string) string {
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name)
		if !ok || rest == "" || rest[0] != ' ' && rest[0] != '{' {
			continue
		}
		if i := strings.LastIndexByte(rest, ' '); i >= 0 {
			return rest[i+1:]
		}
	}
	return "unknown"
}

// steadyResult is what the steady client saw.
type steadyResult struct {
	sent, admitted, refused, other int
	otherCodes                     map[int]int
	span, maxGap, maxWait          time.Duration // first to last request; largest gap between two; slowest response
	sends, recvs                   []time.Time
	err                            error
}

// steady sends one request every step on one connection, each waiting for
// its response, until stop is closed and its span is 40 ms past a
// multiple of the interval.
func steady(addr string, stop <-chan struct{}) (r steadyResult) {
	r.otherCodes = map[int]int{}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		r.err = err
		return r
	}
	defer c.Close()
	br := bufio.NewReader(c)
	req := []byte("GET /api/items HTTP/1.1\r\nHost: flood\r\nX-Forwarded-For: 203.0.113.7\r\n\r\n")
	var first, last time.Time
	stopping := false
	for i := 0; ; i++ {
		at := first.Add(time.Duration(i) * step)
		if i == 0 {
			first, at = time.Now(), time.Now()
		} else if d := time.Until(at); d > 0 {
			time.Sleep(d)
		} else {
			// Late (a stall): skip to the next slot still ahead.
			i += int(-d / step)
			at = first.Add(time.Duration(i) * step)
			time.Sleep(time.Until(at))
		}
		if !stopping {
			select {
			case <-stop:
				stopping = true
			default:
			}
		}
		// The last request goes at a span of k·interval + 40 ms.
		final := stopping && time.Duration(i)*step%interval == 2*step
		now := time.Now()
		if i > 0 {
			r.maxGap = max(r.maxGap, now.Sub(last))
		}
		last = now
		if _, err := c.Write(req); err != nil {
			r.err = err
			return r
		}
		code, err := readResponse(br)
		if err != nil {
			r.err = err
			return r
		}
		recv := time.Now()
		r.maxWait = max(r.maxWait, recv.Sub(now))
		r.sends, r.recvs = append(r.sends, now), append(r.recvs, recv)
		r.sent++
		switch code {
		case 200:
			r.admitted++
		case 429:
			r.refused++
		default:
			r.other++
			r.otherCodes[code]++
		}
		if final {
			// Scheduled instants, not send instants: the gateway sees
			// the same spacing give or take scheduling jitter.
			r.span = time.Duration(i) * step
			return r
		}
	}
}

// reference returns how many requests at the instants ts the gateway's
// token bucket admits, decided by package limit alone.
func reference(ts []time.Time) int {
	tb := limit.TokenBucket{Rate: limit.Per(1, interval), Burst: burst}
	var st limit.State
	n := 0
	for _, t := range ts {
		next, d := tb.Decide(st, t.UnixNano(), 1)
		if st = next; d.Allowed {
			n++
		}
	}
	return n
}

// floodResult is what the flood saw.
type floodResult struct {
	sent     int
	statuses map[int]int
	err      error
}

// flood sends one request for each of keys addresses, over conns
// pipelined connections with up to depth requests in flight each, until
// deadline.
func flood(addr string, next *atomic.Int64, keys, conns, depth int, deadline time.Time) floodResult {
	var mu sync.Mutex
	res := floodResult{statuses: map[int]int{}}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			sent, statuses, err := floodConn(ctx, addr, next, keys, depth)
			mu.Lock()
			defer mu.Unlock()
			res.sent += sent
			for k, v := range statuses {
				res.statuses[k] += v
			}
			if err != nil && res.err == nil {
				res.err = err
			}
		})
	}
	wg.Wait()
	return res
}

// floodConn sends requests on one connection, each with the next unused
// address, until none is left or ctx ends, and reads their responses.
func floodConn(ctx context.Context, addr string, next *atomic.Int64, keys, depth int) (int, map[int]int, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, nil, err
	}
	defer c.Close()
	// pending holds one token per request sent and not yet answered.
	pending := make(chan struct{}, depth)
	statuses := map[int]int{}
	var readErr error
	var reading sync.WaitGroup
	reading.Go(func() {
		br := bufio.NewReaderSize(c, 64<<10)
		for range pending {
			code, err := readResponse(br)
			if err != nil {
				readErr = err
				c.Close() // the writer stops too
				for range pending {
				}
				return
			}
			statuses[code]++
		}
	})
	sent := 0
	bw := bufio.NewWriterSize(c, 64<<10)
	var buf []byte
send:
	for ctx.Err() == nil {
		n := next.Add(1) - 1
		if n >= int64(keys) {
			break
		}
		select {
		case pending <- struct{}{}:
		default:
			// The pipe is full: send what is buffered, then wait.
			if bw.Flush() != nil {
				break send
			}
			pending <- struct{}{}
		}
		n++ // 10.0.0.1 onwards
		buf = append(buf[:0], "GET /api/items HTTP/1.1\r\nHost: flood\r\nX-Forwarded-For: 10."...)
		buf = strconv.AppendInt(buf, n>>16&255, 10)
		buf = append(buf, '.')
		buf = strconv.AppendInt(buf, n>>8&255, 10)
		buf = append(buf, '.')
		buf = strconv.AppendInt(buf, n&255, 10)
		buf = append(buf, "\r\n\r\n"...)
		if _, err := bw.Write(buf); err != nil {
			break // its token stays: the reader has failed and drains
		}
		sent++
	}
	bw.Flush()
	close(pending)
	reading.Wait()
	return sent, statuses, readErr
}

// readResponse reads one HTTP/1.1 response with a Content-Length body and
// returns its status code.
func readResponse(br *bufio.Reader) (int, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	f := bytes.Fields(line)
	if len(f) < 2 {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	code, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	length := -1
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, _ := bytes.Cut(h, []byte(":"))
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(bytes.TrimSpace(value))); err != nil {
				return 0, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return 0, fmt.Errorf("unexpected Transfer-Encoding %q", value)
		}
	}
	if length < 0 {
		return 0, fmt.Errorf("a %d response without Content-Length", code)
	}
	if _, err := br.Discard(length); err != nil {
		return 0, err
	}
	return code, nil
}
