package gateway

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/internal/logtest"
	"github.com/tollgate-dev/tollgate/internal/redistest"
)

// TestSentinelFailoverUnderLoad runs the gateway on a Sentinel set and
// kills the master under load. Three rules that Redis never refuses
// differ only in their failure mode: /open and /local get 200 throughout,
// /closed gets 200 from Redis and 429 while there is no master; no
// request gets anything else. Decisions go back to Redis (the promoted
// replica) without a restart; the time from the kill until /closed is
// decided there again is logged (BENCHMARKS.md records it).
func TestSentinelFailoverUnderLoad(t *testing.T) {
	set := redistest.StartSentinel(t, 500*time.Millisecond, 2*time.Second)
	rule := func(name, mode string) string {
		return fmt.Sprintf("  - {name: %s, match: {paths: [/%s]}, consistency: strict, on_error: %s, policies: [{rate: 1000/h, burst: 1000000}]}\n", name, name, mode)
	}
	cfg, err := config.Parse("test.yaml", []byte(`listen: {addr: "127.0.0.1:0"}
admin: {addr: "127.0.0.1:0"}
reload: {watch: false}
routes: [{path: /, upstream: demo}]
store:
  redis:
    url: redis://`+set.Sentinels[0].Addr+`
    timeout: 100ms
    sentinel: {master: `+redistest.SentinelMaster+`, addrs: ["`+set.Sentinels[1].Addr+`", "`+set.Sentinels[2].Addr+`"]}
rules:
`+rule("open", "open")+rule("closed", "closed")+rule("local", "local")))
	if err != nil {
		t.Fatal(err)
	}
	var logs logtest.Buffer
	g, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	base := "http://" + g.Addr().String()
	client := &http.Client{Timeout: 5 * time.Second}
	status := func(path string) (int, error) {
		resp, err := client.Get(base + path)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	onMaster := func(srv *redistest.Server) int {
		out := strings.TrimSpace(srv.CLI(t, "--scan", "--pattern", "tollgate:*"))
		if out == "" {
			return 0
		}
		return len(strings.Split(out, "\n"))
	}
	// The first decisions may meet a Redis not yet dialled, or a 100 ms
	// timeout on a loaded machine (then /closed answers 429, as it
	// should): wait, bounded, until each rule is decided by Redis.
	for _, p := range []string{"/open", "/closed", "/local"} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			code, err := status(p)
			if err == nil && code == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s before the failover: %d %v", p, code, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if n := onMaster(set.Primary); n != 3 {
		t.Fatalf("%d keys on the master before the failover, want 3", n)
	}

	var (
		mu      sync.Mutex
		results []failoverResult
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	for _, p := range []string{"/open", "/closed", "/local", "/closed"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond): // about 500 requests/s per caller
				}
				code, err := status(p)
				mu.Lock()
				results = append(results, failoverResult{p, code, err, time.Now()})
				mu.Unlock()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	killed := time.Now()
	set.Primary.Kill()
	var recovered time.Duration
	deadline := killed.Add(20 * time.Second)
	for {
		mu.Lock()
		for _, r := range results {
			if r.path == "/closed" && r.code == 200 && r.at.After(killed) && recovered == 0 && sawRefusalBefore(results, r.at, killed) {
				recovered = r.at.Sub(killed)
			}
		}
		mu.Unlock()
		if recovered > 0 {
			break
		}
		if time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			t.Fatalf("/closed not decided on Redis again 20s after the master was killed\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()

	counts := map[string]map[int]int{}
	for _, r := range results {
		if r.err != nil {
			t.Fatalf("%s: %v", r.path, r.err)
		}
		if counts[r.path] == nil {
			counts[r.path] = map[int]int{}
		}
		counts[r.path][r.code]++
		want := r.code == 200 || r.path == "/closed" && r.code == 429
		if !want {
			t.Fatalf("%s got %d: not its rule's answer", r.path, r.code)
		}
	}
	if counts["/closed"][429] == 0 {
		t.Fatal("/closed was never refused: the failover went unnoticed")
	}
	set.WaitMaster(t, set.Replica.Addr)
	set.Replica.CLI(t, "FLUSHALL")
	for _, p := range []string{"/open", "/closed", "/local"} {
		if code, err := status(p); err != nil || code != 200 {
			t.Fatalf("%s after the failover: %d %v", p, code, err)
		}
	}
	if n := onMaster(set.Replica); n != 3 {
		t.Fatalf("%d keys on the new master after the failover, want 3: not decided on Redis", n)
	}
	paths := make([]string, 0, len(counts))
	for p := range counts {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var summary []string
	for _, p := range paths {
		summary = append(summary, fmt.Sprintf("%s %v", p, counts[p]))
	}
	t.Logf("sentinel failover under load: %d requests (%s), none answered otherwise than by its rule; /closed decided on Redis again %v after the master was killed (down-after-milliseconds 500)",
		len(results), strings.Join(summary, ", "), recovered.Round(time.Millisecond))
}

// sawRefusalBefore reports whether some /closed request after killed and
// before at was refused: the 200 at at comes after the failover began,
// not from a request sent before the master died.
func sawRefusalBefore(rs []failoverResult, at, killed time.Time) bool {
	for _, r := range rs {
		if r.path == "/closed" && r.code == 429 && r.at.After(killed) && r.at.Before(at) {
			return true
		}
	}
	return false
}

// failoverResult is one request's answer during the failover test.
type failoverResult struct {
	path string
	code int
	err  error
	at   time.Time
}
