package gateway

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/config"
)

// startWatchedGateway writes yaml to a file in dir and serves it with the
// watcher on: polled every 10ms (the least reload.interval), settle as
// given.
func startWatchedGateway(t *testing.T, dir, yaml, settle string) (*Gateway, string, string) {
	t.Helper()
	path := filepath.Join(dir, "tollgate.yaml")
	g := startFileGateway(t, path, watchedHead(settle)+yaml)
	return g, path, "http://" + g.Addr().String()
}

// startFileGateway writes src to path and serves it as tollgate serve
// -config path would: loaded from the file (so that its relative paths,
// list files and watching are the file's), started, closed at the end
// of the test.
func startFileGateway(t *testing.T, path, src string) *Gateway {
	t.Helper()
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	return g
}

func watchedHead(settle string) string {
	return `listen: {addr: "127.0.0.1:0"}
admin: {addr: "off"}
reload: {watch: true, interval: 10ms, settle: ` + settle + `}
routes: [{path: /, upstream: demo}]
`
}

// writeInTwo writes a file the way a truncating writer does: truncate,
// write first, pause, write rest.
func writeInTwo(t *testing.T, path, first, rest string, pause time.Duration) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(first); err != nil {
		t.Fatal(err)
	}
	time.Sleep(pause) // the writer's pause, which the watcher must sit out
	if _, err := f.WriteString(rest); err != nil {
		t.Fatal(err)
	}
}

// replaceByRename writes data beside path and renames it over path.
func replaceByRename(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// hammer sends requests to url, one at a time, passing each response's
// RateLimit-Policy to check, until the returned stop is called (or the
// test ends); stop returns how many were sent.
func hammer(t *testing.T, url string, hdr http.Header, check func(policy string)) (stop func() int) {
	done := make(chan struct{})
	var n atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		c := &http.Client{Timeout: 5 * time.Second}
		for {
			select {
			case <-done:
				return
			default:
			}
			req, _ := http.NewRequest("GET", url, nil)
			req.Header = hdr.Clone()
			resp, err := c.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			check(resp.Header.Get("RateLimit-Policy"))
			n.Add(1)
		}
	})
	var once sync.Once
	stop = func() int {
		once.Do(func() { close(done); wg.Wait() })
		return int(n.Load())
	}
	t.Cleanup(func() { stop() })
	return stop
}

// waitFor polls cond until it holds, for at most 10 s (the watcher acts
// on its own schedule; no assertion depends on how long it took).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A configuration file truncated and written in two pieces with a pause
// between is never served half written: the watcher waits until the
// file has stopped changing, then loads the whole of it.
func TestWatchNeverServesAHalfWrittenFile(t *testing.T) {
	const rules = `rules:
  - name: first
    policies: [{algorithm: fixed_window, limit: 1000000, window: 1h}]
`
	second := func(limit string) string {
		return `  - name: second
    policies: [{algorithm: fixed_window, limit: ` + limit + `, window: 1h}]
`
	}
	dir := t.TempDir()
	g, path, base := startWatchedGateway(t, dir, rules+second("1000000"), "1s")
	// A change written the documented way, by rename, is reloaded.
	replaceByRename(t, path, watchedHead("1s")+rules+second("999998"))
	waitFor(t, "the renamed file to load", func() bool { return testCounter(g, "success") == 1 })

	// Every snapshot the gateway swaps in, and every response, must have
	// both rules.
	var halves atomic.Int64
	sampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-sampling:
				return
			default:
			}
			if len(g.core.Snap.Load().Cfg.Rules) != 2 {
				halves.Add(1)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	t.Cleanup(func() {
		select {
		case <-sampling:
		default:
			close(sampling)
		}
		<-sampled
	})
	var served atomic.Int64
	stop := hammer(t, base+"/", http.Header{}, func(policy string) {
		if !strings.Contains(policy, `"second"`) {
			served.Add(1)
		}
	})

	writeInTwo(t, path, watchedHead("1s")+rules, second("999999"), 300*time.Millisecond)
	waitFor(t, "the whole new file to load", func() bool {
		rs := g.core.Snap.Load().Cfg.Rules
		return len(rs) == 2 && rs[1].Policies[0].Limit == 999999
	})
	n := stop()
	close(sampling)
	<-sampled
	if halves.Load() > 0 || served.Load() > 0 {
		t.Fatalf("the half-written file was loaded: seen %d times, %d of %d responses served under it", halves.Load(), served.Load(), n)
	}
	if v := testCounter(g, "success"); v != 2 {
		t.Errorf("%v successful reloads, want 2 (the renamed file, then the whole written one)", v)
	}
	if v := testCounter(g, "failure"); v != 0 {
		t.Errorf("%v failed reloads, want 0", v)
	}
}

// A members file is watched like the configuration file, with the same
// wait for it to settle: a key moved to another plan takes effect
// without SIGHUP, and a members file caught half written is not served.
func TestWatchReloadsChangedMembersFile(t *testing.T) {
	dir := t.TempDir()
	members := filepath.Join(dir, "members.txt")
	if err := os.WriteFile(members, []byte("k0 pro\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, _, base := startWatchedGateway(t, dir, `headers: {styles: [draft10]}
rules:
  - name: api
    key: header:X-Key
    tiers:
      default: free
      members_file: members.txt
      plans:
        free: [{algorithm: fixed_window, limit: 1000000, window: 1h}]
        pro: [{algorithm: fixed_window, limit: 2000000, window: 1h}]
`, "1s")
	plan := func(key string) string {
		req, _ := http.NewRequest("GET", base+"/", nil)
		req.Header.Set("X-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("RateLimit-Policy")
	}
	if p := plan("k0"); !strings.Contains(p, `"api-pro"`) {
		t.Fatalf("k0 before: %q, want pro", p)
	}
	if p := plan("k1"); !strings.Contains(p, `"api-free"`) {
		t.Fatalf("k1 before: %q, want free", p)
	}

	// k0 stays pro throughout, though the file holds only k1 during the
	// writer's pause.
	var wrong atomic.Int64
	stop := hammer(t, base+"/", http.Header{"X-Key": {"k0"}}, func(policy string) {
		if !strings.Contains(policy, `"api-pro"`) {
			wrong.Add(1)
		}
	})
	writeInTwo(t, members, "k1 pro\n", "k0 pro\n", 300*time.Millisecond)
	waitFor(t, "k1 to move to pro", func() bool { return strings.Contains(plan("k1"), `"api-pro"`) })
	if n := stop(); wrong.Load() > 0 {
		t.Fatalf("%d of %d responses for k0 served under the half-written members file", wrong.Load(), n)
	}
	if v := testCounter(g, "success"); v != 1 {
		t.Errorf("%v successful reloads, want 1", v)
	}
}

// A changed file is reloaded only once it has kept one version for the
// settle period; a change during the wait starts it again, and a members
// file that changes holds back the reload as the configuration file does.
func TestWatcherWaitsForFilesToSettle(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	members := filepath.Join(dir, "m.txt")
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	yaml := "reload: {settle: 1s}\nrules: [{name: a, key: header:K, tiers: {default: f, members_file: m.txt, plans: {f: [{rate: 1/s}]}}}]\n"
	write(path, yaml)
	write(members, "k1 f\n")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	w := newWatcher(cfg)
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) []string {
		t.Helper()
		data, changed := w.look(cfg, t0.Add(d))
		if changed != nil && string(data) != yaml {
			t.Fatalf("look at %v: data %q", d, data)
		}
		for i, p := range changed {
			changed[i] = filepath.Base(p)
		}
		return changed
	}
	if c := at(0); c != nil {
		t.Fatalf("unchanged files: %v", c)
	}
	write(members, "k1 f\nk2")
	if c := at(0); c != nil {
		t.Fatalf("just changed: %v", c)
	}
	write(members, "k1 f\nk2 f\n") // still being written
	if c := at(900 * time.Millisecond); c != nil {
		t.Fatalf("changed again: %v", c)
	}
	if c := at(1800 * time.Millisecond); c != nil {
		t.Fatalf("0.9s after the last change: %v", c)
	}
	yaml = "# edited\n" + yaml
	write(path, yaml) // the configuration changes too: both must settle
	if c := at(2 * time.Second); c != nil {
		t.Fatalf("configuration just changed: %v", c)
	}
	if c := at(3 * time.Second); strings.Join(c, ",") != "c.yaml,m.txt" {
		t.Fatalf("both settled: %v, want c.yaml,m.txt", c)
	}
	w.track(cfg) // as after the reload
	if c := at(4 * time.Second); c != nil {
		t.Fatalf("after the reload: %v", c)
	}
	// A configuration file that cannot be read reloads nothing.
	os.Remove(path)
	if c := at(5 * time.Second); c != nil {
		t.Fatalf("missing file: %v", c)
	}
}
