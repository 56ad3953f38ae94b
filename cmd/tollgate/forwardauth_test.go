package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/redistest"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "tollgate.yaml")
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestForwardAuthRefusesConfigurationsItCannotServe(t *testing.T) {
	for _, tc := range []struct{ name, cfg, want string }{
		{"no trusted proxy", "rules: [{name: r, policies: [{rate: 10/s}]}]\n", "client_ip.trusted_proxies is empty"},
		{"a strict tier without Redis", "client_ip: {trusted_proxies: [127.0.0.1]}\nrules: [{name: r, consistency: strict, policies: [{rate: 10/s}]}]\n", "store.redis"},
		{"an invalid file", "rules: [{name: r, policies: [{rate: ten}]}]\n", "rate"},
	} {
		code, _, stderr := runCLI("forward-auth", "-config", writeConfig(t, tc.cfg), "-listen", freeAddr(t))
		if code != exitFail || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want %d mentioning %q", tc.name, code, stderr, exitFail, tc.want)
		}
	}
	if code, _, _ := runCLI("forward-auth"); code != exitUsage {
		t.Errorf("no -config: exit %d, want %d", code, exitUsage)
	}
}

// Two forward-auth processes on one redis-server share the counters.
func TestForwardAuthSharesCountersOnRedis(t *testing.T) {
	rs := redistest.Start(t)
	file := writeConfig(t, `client_ip: {trusted_proxies: [127.0.0.1]}
store: {redis: {url: "redis://`+rs.Addr+`", prefix: "fa:", timeout: 2s}}
on_error: closed
rules:
  - name: api
    match: {path_prefixes: [/api/]}
    policies: [{algorithm: fixed_window, limit: 3, window: 1h}]
`)
	ctx, cancel := context.WithCancel(context.Background())
	var addrs []string
	done := make(chan int, 2)
	for range 2 {
		addr := freeAddr(t)
		addrs = append(addrs, addr)
		go func() {
			done <- forwardAuth(ctx, file, addr, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard)
		}()
	}
	for _, a := range addrs {
		eventually(t, "forward-auth listening on "+a, func() bool {
			c, err := net.Dial("tcp", a)
			if err == nil {
				c.Close()
			}
			return err == nil
		})
	}
	ask := func(i int) int {
		resp, _ := get(t, "http://"+addrs[i%2]+"/auth", "X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/api/x", "X-Forwarded-For", "203.0.113.7")
		return resp.StatusCode
	}
	var codes []int
	for i := range 4 {
		codes = append(codes, ask(i))
	}
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 200 || codes[3] != 429 {
		t.Errorf("codes %v across both processes, want 200 200 200 429", codes)
	}
	cancel()
	for range 2 {
		if code := <-done; code != exitOK {
			t.Errorf("exit %d after the context ended, want %d", code, exitOK)
		}
	}
}

// SIGHUP reloads the rules; a file that does not load, or that changes
// the store, keeps the running ones.
func TestForwardAuthReloadsOnSIGHUP(t *testing.T) {
	rulesWith := func(limit string) string {
		return "client_ip: {trusted_proxies: [127.0.0.1]}\n" +
			"rules: [{name: api, match: {path_prefixes: [/api/]}, policies: [{algorithm: fixed_window, limit: " + limit + ", window: 1h}]}]\n"
	}
	file := writeConfig(t, rulesWith("1"))
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hup := make(chan os.Signal)
	var logs syncLog
	done := make(chan int, 1)
	go func() {
		done <- forwardAuth(ctx, file, addr, hup, slog.New(slog.NewTextHandler(&logs, nil)), io.Discard)
	}()
	eventually(t, "forward-auth listening", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	ask := func() int {
		resp, _ := get(t, "http://"+addr+"/auth", "X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/api/x", "X-Forwarded-For", "203.0.113.7")
		return resp.StatusCode
	}
	if a, b := ask(), ask(); a != 200 || b != 429 {
		t.Fatalf("limit 1: %d %d, want 200 429", a, b)
	}
	reload := func(text string) {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		hup <- syscall.SIGHUP // unbuffered: taken by the serving loop
		hup <- syscall.SIGHUP // ... and the first one handled
	}
	reload("rules: [{name: api, policies: [{rate: ten}]}]\n")
	if ask() != 429 {
		t.Errorf("after a file that does not load: not 429, want the old rules")
	}
	reload(rulesWith("5") + "store: {memory: {max_keys: 10}}\n")
	if ask() != 429 {
		t.Errorf("after a store change: not 429, want the old rules")
	}
	reload(rulesWith("3"))
	if a, b, c := ask(), ask(), ask(); a != 200 || b != 200 || c != 429 {
		t.Errorf("limit 3 (one already counted): %d %d %d, want 200 200 429", a, b, c)
	}
	for _, want := range []string{"rate", "the store section changed", "config reloaded"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("exit %d, want %d", code, exitOK)
	}
}

// syncLog is a log destination safe for the serving goroutine.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A concurrency policy cannot be held by an auth subrequest, which ends
// before the request it asks about: forward-auth refuses the file at
// start, naming the rule and what to use instead.
func TestForwardAuthRefusesConcurrencyPolicies(t *testing.T) {
	cfg := "client_ip: {trusted_proxies: [127.0.0.1]}\nrules:\n  - name: inflight\n    policies:\n      - {rate: 5/s}\n      - {algorithm: concurrency, limit: 4}\n"
	code, _, stderr := runCLI("forward-auth", "-config", writeConfig(t, cfg), "-listen", freeAddr(t))
	if code != exitFail || !strings.Contains(stderr, `"inflight"`) || !strings.Contains(stderr, "concurrency") || !strings.Contains(stderr, ":6:") {
		t.Errorf("exit %d, stderr %q; want %d naming the rule and concurrency at line 6", code, stderr, exitFail)
	}
}

// forward-auth never sees the origin's answer: a rule with count is
// refused at start, naming the rule and saying why.
func TestForwardAuthRefusesCounting(t *testing.T) {
	cfg := "client_ip: {trusted_proxies: [127.0.0.1]}\nrules:\n  - name: failed-logins\n    policies: [{rate: 5/15m}]\n    count: {statuses: [\"401\"]}\n"
	code, _, stderr := runCLI("forward-auth", "-config", writeConfig(t, cfg), "-listen", freeAddr(t))
	if code != exitFail || !strings.Contains(stderr, `"failed-logins"`) || !strings.Contains(stderr, "count") || !strings.Contains(stderr, ":5:") {
		t.Errorf("exit %d, stderr %q; want %d naming the rule and count at line 5", code, stderr, exitFail)
	}
}

// forward-auth never sees the client's TLS handshake: a rule (or the
// top-level except) reading the ja4 fingerprint is refused at start, at
// its line (reloadForwardAuth runs the same check).
func TestForwardAuthRefusesJA4(t *testing.T) {
	for _, c := range []struct{ cfg, want string }{
		{"client_ip: {trusted_proxies: [127.0.0.1]}\nrules:\n  - name: bots\n    key: [ja4]\n    policies: [{rate: 5/s}]\n", ":4:"},
		{"client_ip: {trusted_proxies: [127.0.0.1]}\nexcept:\n  - ja4: [t13d1516h2_8daaf6152771_e5627efa2ab1]\nrules: [{name: api, policies: [{rate: 5/s}]}]\n", ":3:"},
	} {
		code, _, stderr := runCLI("forward-auth", "-config", writeConfig(t, c.cfg), "-listen", freeAddr(t))
		if code != exitFail || !strings.Contains(stderr, "ja4") || !strings.Contains(stderr, c.want) {
			t.Errorf("exit %d, stderr %q; want %d naming ja4 at line %s", code, stderr, exitFail, c.want)
		}
	}
}
