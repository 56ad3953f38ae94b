package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/internal/logtest"
	"github.com/tollgate-dev/tollgate/internal/redistest"
)

func startTestGateway(t *testing.T, yaml string) (*Gateway, string) {
	t.Helper()
	g := newTestGateway(t, `listen: {addr: "127.0.0.1:0"}
admin: {addr: "127.0.0.1:0"}
reload: {watch: false}
`+yaml)
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	return g, "http://" + g.Addr().String()
}

func get(t *testing.T, url string, host string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// Host-specific routes win over catch-alls, then the longest prefix.
func TestRouting(t *testing.T) {
	mk := func(name string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, name+" "+r.URL.Path)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	a, b, c := mk("a"), mk("b"), mk("c")
	_, base := startTestGateway(t, `routes:
  - {path: /, upstream: "`+a+`"}
  - {path: /api/, upstream: "`+b+`/v2"}
  - {host: admin.example, path: /, upstream: "`+c+`"}
`)
	for _, tc := range []struct{ host, path, want string }{
		{"", "/x", "a /x"},
		{"", "/api/items", "b /v2/api/items"},
		{"Admin.Example:8080", "/api/items", "c /api/items"},
		{"other.example", "/api/", "b /v2/api/"},
	} {
		if code, body, _ := get(t, base+tc.path, tc.host); code != 200 || body != tc.want {
			t.Errorf("%s%s: %d %q, want %q", tc.host, tc.path, code, body, tc.want)
		}
	}
}

// /config hides the Redis password and the tier members (API keys).
func TestMaskedConfig(t *testing.T) {
	cfg, err := config.Parse("c.yaml", []byte(`store: {redis: {url: "redis://user:hunter2@localhost:6379/1"}}
rules:
  - name: api
    key: header:X-API-Key
    tiers:
      default: free
      plans: {free: [{rate: 1/s}], pro: [{rate: 10/s}]}
      members: {sk-live-abcdef: pro}
`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := cfg.Masked()
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if strings.Contains(s, "hunter2") || strings.Contains(s, "sk-live-abcdef") {
		t.Fatalf("secrets shown:\n%s", s)
	}
	if !strings.Contains(s, "redis://user:xxxxx@localhost:6379/1") || !strings.Contains(s, "1 members hidden") {
		t.Fatalf("masked config:\n%s", s)
	}
	if cfg.Store.Redis.URL != "redis://user:hunter2@localhost:6379/1" || len(cfg.Rules[0].Tiers.Members) != 1 {
		t.Fatal("Masked changed the running configuration")
	}
}

// The admin endpoints answer; readiness turns off at shutdown.
func TestAdminEndpoints(t *testing.T) {
	g, base := startTestGateway(t, "routes: [{path: /, upstream: demo}]\nrules: [{name: r, policies: [{rate: 10/s}]}]\n")
	get(t, base+"/", "")
	admin := "http://" + g.AdminAddr().String()
	for path, want := range map[string]string{
		"/healthz": "ok",
		"/readyz":  "ready",
		"/config":  "upstream: demo",
		"/metrics": `tollgate_decisions_total{outcome="allowed",policy="r",rule="r"} 1`,
	} {
		if code, body, _ := get(t, admin+path, ""); code != 200 || !strings.Contains(body, want) {
			t.Errorf("%s: %d, body lacks %q:\n%s", path, code, want, body)
		}
	}
	// Labels stay bounded: no client address or key appears.
	if _, body, _ := get(t, admin+"/metrics", ""); strings.Contains(body, "127.0.0.1") {
		t.Errorf("a client address leaked into metrics")
	}
	g.ready.Store(false)
	if code, _, _ := get(t, admin+"/readyz", ""); code != 503 {
		t.Errorf("/readyz while shutting down: %d", code)
	}
}

// A reload that needs a restart is refused and counted; the old
// configuration keeps serving. A good one swaps the rules.
func TestReloadInProcess(t *testing.T) {
	g, base := startTestGateway(t, "routes: [{path: /, upstream: demo}]\n")
	parse := func(y string) *config.Config {
		c, err := config.Parse("c.yaml", []byte(y))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	bad := parse(`listen: {addr: "127.0.0.1:1"}` + "\nadmin: {addr: \"127.0.0.1:0\"}\nreload: {watch: false}\n")
	if err := g.Reload(bad); err == nil || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("reload with a new listen address: %v", err)
	}
	slower := *g.Config()
	slower.Listen.ReadTimeout *= 2
	if err := g.Reload(&slower); err == nil || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("reload with a new read timeout: %v (a server setting must not be silently ignored)", err)
	}
	good := g.Config()
	next := *good
	next.Rules = parse("rules: [{name: r, policies: [{algorithm: fixed_window, limit: 1, window: 1h}]}]").Rules
	if err := g.Reload(&next); err != nil {
		t.Fatal(err)
	}
	get(t, base+"/", "")
	if code, _, _ := get(t, base+"/", ""); code != 429 {
		t.Fatalf("after reload: %d, want 429", code)
	}
	if v := testCounter(g, "failure"); v != 2 {
		t.Errorf("failure count %v", v)
	}
}

func testCounter(g *Gateway, result string) float64 {
	mfs, _ := g.core.M.Reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "tollgate_config_reloads_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

// An upstream at its connection limit answers 503 rather than queueing
// forever.
func TestUpstreamConnLimit(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	defer srv.Close()
	defer close(release)
	_, base := startTestGateway(t, "upstream: {max_conns: 1, response_timeout: 300ms}\nroutes: [{path: /, upstream: \""+srv.URL+"\"}]\n")
	done := make(chan int, 1)
	go func() {
		code, _, _ := get(t, base+"/first", "")
		done <- code
	}()
	select { // the first request occupies the only connection
	case <-entered:
	case c := <-done:
		t.Fatalf("first request ended early: %d", c)
	}
	code, body, _ := get(t, base+"/second", "")
	if code != 503 && code != 504 {
		t.Fatalf("second request: %d %q, want 503 or 504", code, body)
	}
}

// Close stops every goroutine the gateway started.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	run := func() {
		g, base := startTestGateway(t, "routes: [{path: /, upstream: demo}]\nrules: [{name: r, policies: [{rate: 10/s}]}]\n")
		get(t, base+"/", "")
		get(t, "http://"+g.AdminAddr().String()+"/metrics", "")
		http.DefaultClient.CloseIdleConnections()
		g.Close()
	}
	run() // starts fasthttp's and net/http's process-wide helpers once
	before := goroutines()
	run()
	deadline := time.Now().Add(5 * time.Second)
	for goroutines() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", goroutines(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// goroutines counts the live goroutines but fasthttp's worker-pool
// cleaners, which notice a stopped server only after their 10 s sleep.
func goroutines() int {
	buf := make([]byte, 1<<20)
	stacks := strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n")
	n := 0
	for _, s := range stacks {
		if !strings.Contains(s, "fasthttp.(*workerPool).Start.func") {
			n++
		}
	}
	return n
}

// A shaping rule delays the excess instead of refusing it, and counts it
// as delayed.
func TestShapingDelays(t *testing.T) {
	g, base := startTestGateway(t, `routes: [{path: /, upstream: demo}]
rules:
  - name: shape
    policies: [{algorithm: leaky_bucket, rate: 5/s, burst: 5, mode: shape}]
`)
	// 5/s: each request after the first waits 200 ms for its turn, a
	// margin a loaded -race run keeps (at 50/s a request 20 ms late was
	// no longer excess).
	for range 3 {
		if code, _, _ := get(t, base+"/", ""); code != 200 {
			t.Fatalf("status %d, want 200 (delayed, not refused)", code)
		}
	}
	_, body, _ := get(t, "http://"+g.AdminAddr().String()+"/metrics", "")
	if !strings.Contains(body, `tollgate_decisions_total{outcome="delayed",policy="shape",rule="shape"} 2`) {
		t.Errorf("want 2 delayed decisions:\n%s", body)
	}
}

// X-Forwarded-For keeps the incoming list only from a trusted proxy.
func TestForwardedForTrust(t *testing.T) {
	seen := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Get("X-Forwarded-For") + " | " + r.Header.Get("X-Forwarded-Proto")
	}))
	defer srv.Close()
	for _, tc := range []struct{ trusted, want string }{
		{"", "127.0.0.1 | http"},
		{"client_ip: {trusted_proxies: [127.0.0.0/8]}\n", "198.51.100.7, 10.0.0.1, 127.0.0.1 | http"},
	} {
		_, base := startTestGateway(t, tc.trusted+"routes: [{path: /, upstream: \""+srv.URL+"\"}]\n")
		req, _ := http.NewRequest("GET", base+"/", nil)
		req.Header.Set("X-Forwarded-For", "198.51.100.7, 10.0.0.1")
		req.Header.Set("X-Forwarded-Proto", "https")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := <-seen; got != tc.want {
			t.Errorf("trusted %q: origin saw %q, want %q", tc.trusted, got, tc.want)
		}
	}
}

// startRedisGateway starts a gateway on the Redis at addr, logging to the
// returned buffer.
func startRedisGateway(t *testing.T, addr, yaml string) (*Gateway, string, string, *logtest.Buffer) {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(`listen: {addr: "127.0.0.1:0"}
admin: {addr: "127.0.0.1:0"}
reload: {watch: false}
routes: [{path: /, upstream: demo}]
store: {redis: {url: "redis://`+addr+`", timeout: 2s}}
`+yaml))
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
	return g, "http://" + g.Addr().String(), "http://" + g.AdminAddr().String(), &logs
}

// eventually polls cond (a real process, a real outage) for up to 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStartsAndServesWhileRedisIsDown: with nothing listening at the
// Redis address the gateway starts and answers each rule by its failure
// mode (the top-level open, the login rule's own closed), /readyz says
// which rule refuses; once redis-server starts there, decisions go to it.
func TestStartsAndServesWhileRedisIsDown(t *testing.T) {
	srv := redistest.Start(t)
	srv.Kill() // nothing listens on its port now
	g, base, admin, logs := startRedisGateway(t, srv.Addr, `on_error: open
rules:
  - {name: per-ip, policies: [{algorithm: fixed_window, limit: 3, window: 1h}]}
  - name: login
    match: {paths: [/login]}
    consistency: strict
    on_error: closed
    policies: [{algorithm: fixed_window, limit: 5, window: 1h}]
`)
	for range 4 { // more than the limit: nothing counts while Redis is down
		if code, _, _ := get(t, base+"/", ""); code != 200 {
			t.Fatalf("/ with Redis down (on_error open): %d, want 200", code)
		}
	}
	if code, _, _ := get(t, base+"/login", ""); code != 429 {
		t.Fatalf("/login with Redis down (on_error closed): %d, want 429", code)
	}
	if code, body, _ := get(t, admin+"/readyz", ""); code != 503 || !strings.Contains(body, "login") {
		t.Fatalf("/readyz with Redis down and a closed rule: %d %q", code, body)
	}
	if _, body, _ := get(t, admin+"/metrics", ""); !strings.Contains(body, "tollgate_redis_up 0") ||
		!strings.Contains(body, `tollgate_redis_failover_decisions_total{mode="closed"} 1`) ||
		!strings.Contains(body, `tollgate_redis_failover_decisions_total{mode="open"} 5`) { // /login matches per-ip too
		t.Fatalf("metrics with Redis down:\n%s", body)
	}

	srv.Restart(t)
	eventually(t, "the gateway reaches Redis", func() bool { return g.stores.Redis().Stats().Connected })
	if code, _, _ := get(t, base+"/login", ""); code != 200 {
		t.Fatalf("/login once Redis is up: %d", code)
	}
	for i, want := range []int{200, 200, 429} { // per-ip's limit of 3, /login included
		if code, _, _ := get(t, base+"/", ""); code != want {
			t.Fatalf("request %d to / once Redis is up: %d, want %d", i, code, want)
		}
	}
	if code, _, _ := get(t, admin+"/readyz", ""); code != 200 {
		t.Fatalf("/readyz once Redis is up: %d", code)
	}
	if keys := srv.CLI(t, "DBSIZE"); strings.TrimSpace(keys) == "0" {
		t.Fatal("no key in Redis: the decisions did not go there")
	}
	out := logs.String()
	if strings.Count(out, "not reachable") != 1 || strings.Count(out, "redis: connected") != 1 {
		t.Fatalf("want one line when Redis is unreachable and one when reached:\n%s", out)
	}
}

// TestRedisOutageShowsInReadinessMetricsAndLog: Redis dies under a
// gateway whose rules fail closed: /readyz turns 503, the breaker and the
// failures show in the metrics, the log says so once (not once per
// request), and all turn back when Redis returns.
func TestRedisOutageShowsInReadinessMetricsAndLog(t *testing.T) {
	srv := redistest.Start(t)
	_, base, admin, logs := startRedisGateway(t, srv.Addr, `on_error: closed
rules: [{name: per-ip, policies: [{rate: 1000/s, burst: 1000}]}]
`)
	if code, _, _ := get(t, base+"/", ""); code != 200 {
		t.Fatalf("with Redis up: %d", code)
	}
	if code, _, _ := get(t, admin+"/readyz", ""); code != 200 {
		t.Fatalf("/readyz with Redis up: %d", code)
	}
	srv.Kill()
	for range 50 {
		if code, _, _ := get(t, base+"/", ""); code != 429 {
			t.Fatalf("with Redis down (on_error closed): %d, want 429", code)
		}
	}
	if code, body, _ := get(t, admin+"/readyz", ""); code != 503 || !strings.Contains(body, "per-ip") {
		t.Fatalf("/readyz with Redis down: %d %q", code, body)
	}
	_, body, _ := get(t, admin+"/metrics", "")
	for _, want := range []string{"tollgate_redis_up 0", "tollgate_redis_breaker_open 1", "tollgate_redis_breaker_trips_total 1",
		`tollgate_redis_failover_decisions_total{mode="closed"} 50`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if !strings.Contains(body, `tollgate_redis_failures_total{kind="error"}`) || strings.Contains(body, `tollgate_redis_failures_total{kind="error"} 0`) {
		t.Errorf("no failure counted:\n%s", body)
	}
	if n := strings.Count(logs.String(), "circuit breaker opened"); n != 1 {
		t.Errorf("%d log lines for the breaker opening, want 1:\n%s", n, logs.String())
	}
	srv.Restart(t)
	eventually(t, "/readyz is 200 again", func() bool {
		get(t, base+"/", "") // a decision starts the breaker's probe
		code, _, _ := get(t, admin+"/readyz", "")
		return code == 200
	})
	if !strings.Contains(logs.String(), "circuit breaker closed") {
		t.Errorf("no log line for the breaker closing:\n%s", logs.String())
	}
}

// TestErrorReplyIsRefusedWhenFailingClosed: a limited key overwritten with
// a value of another type (Redis answers the script with an error) is a
// store failure, refused under on_error closed, never allowed; the log
// line names the key only hashed.
func TestErrorReplyIsRefusedWhenFailingClosed(t *testing.T) {
	srv := redistest.Start(t)
	_, base, _, logs := startRedisGateway(t, srv.Addr, `on_error: closed
rules: [{name: per-ip, policies: [{rate: 1/h, burst: 1000}]}]
`)
	if code, _, _ := get(t, base+"/", ""); code != 200 {
		t.Fatalf("first request: %d", code)
	}
	key := strings.TrimSpace(srv.CLI(t, "--scan", "--pattern", "tollgate:*"))
	if key == "" || strings.Contains(key, "\n") {
		t.Fatalf("want the one key of the client, got %q", key)
	}
	srv.CLI(t, "SET", key, "garbage")
	for range 20 {
		if code, _, _ := get(t, base+"/", ""); code != 429 {
			t.Fatalf("with the key holding another type (on_error closed): %d, want 429", code)
		}
	}
	if out := logs.String(); strings.Contains(out, "127.0.0.1}") || strings.Count(out, "error reply") != 1 {
		t.Fatalf("want one error-reply line without the client's address:\n%s", out)
	}
}

// TestReloadChangesTheFailureMode: on_error is the rules' setting, not the
// store's: a reload changes what a rule answers while Redis is down, with
// no restart.
func TestReloadChangesTheFailureMode(t *testing.T) {
	srv := redistest.Start(t)
	srv.Kill()
	g, base, _, _ := startRedisGateway(t, srv.Addr, `on_error: open
rules: [{name: per-ip, policies: [{rate: 10/s}]}]
`)
	if code, _, _ := get(t, base+"/", ""); code != 200 {
		t.Fatalf("on_error open with Redis down: %d", code)
	}
	next := *g.Config()
	next.OnError = "closed"
	if err := g.Reload(&next); err != nil {
		t.Fatalf("reload to on_error closed: %v", err)
	}
	if code, _, _ := get(t, base+"/", ""); code != 429 {
		t.Fatalf("on_error closed after reload with Redis down: %d", code)
	}
}

// A memory store full of clients being limited refuses a new client with
// 503, whatever on_error says, and the metrics show why: keys evicted and
// new keys the store had no room for.
func TestFullMemoryStoreRefusesAndShowsInMetrics(t *testing.T) {
	g, base := startTestGateway(t, `routes: [{path: /, upstream: demo}]
client_ip: {trusted_proxies: [127.0.0.1/32]}
on_error: open
store: {memory: {max_keys: 256}}
rules: [{name: r, key: ip, policies: [{algorithm: fixed_window, limit: 1, window: 1h}]}]
`)
	send := func(ip string) int {
		req, _ := http.NewRequest("GET", base+"/", nil)
		req.Header.Set("X-Forwarded-For", ip)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	full := 0
	for i := range 2000 { // each client spends its one request: every key is being limited
		if send(fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)) == 503 {
			full++
		}
	}
	if full == 0 {
		t.Fatal("2000 clients into a store of 256 limited keys: none refused for want of room")
	}
	_, body, _ := get(t, "http://"+g.AdminAddr().String()+"/metrics", "")
	for _, want := range []string{`tollgate_store_live_keys{store="memory"}`, fmt.Sprintf(`tollgate_store_full_total{store="memory"} %d`, full)} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// Shutdown right after Start returns, however early in its Serve the traffic
// listener's goroutine is: fasthttp's Shutdown before Serve registered
// its listener returned at once, and Close then waited for a Serve that
// never ended (seen as a hung test).
func TestCloseRightAfterStartReturns(t *testing.T) {
	for range 200 {
		g := newTestGateway(t, "listen: {addr: \"127.0.0.1:0\"}\nadmin: {addr: \"off\"}\nreload: {watch: false}\nroutes: [{path: /, upstream: demo}]\n")
		if err := g.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // as tollgate serve does when its context ended during Start
		go func() { g.Shutdown(ctx); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Shutdown right after Start did not return in 10s")
		}
	}
}
