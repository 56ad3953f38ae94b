package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
)

// TestE2EConsistencyTiers runs two gateways on one real Redis with rules
// of every tier in one file, and kills Redis in the middle: the strict
// rule shares one exact count across the gateways and, set to
// on_error closed, refuses while Redis is down; the local rule counts in each
// gateway alone, its limit divided by the node count, and keeps counting
// (and refusing at its limit) while Redis is down; the eventual rule's
// admissions on one gateway reach the other through Redis; a rule without a tier
// keeps the top-level on_error (local: allowed, counted in memory).
//
// Redis's timeout is 2 s, not 100 ms: with Redis up, an answer a loaded
// machine slowed past a short timeout was decided by on_error (a 429 of
// the strict rule); with Redis killed every call fails at once (the port
// refuses), so the answers while it is down come as fast as before, and
// any that waited for the timeout fails the 2 s check of codes.
func TestE2EConsistencyTiers(t *testing.T) {
	rs := redistest.Start(t)
	srv, _ := origin(t)
	cfg := baseCfg + "routes: [{path: /, upstream: \"" + srv.URL + "\"}]\n" +
		"store: {redis: {url: \"redis://" + rs.Addr + "\", prefix: \"e2e:\", timeout: 2s}}\non_error: local\n" +
		`rules:
  - name: exact
    match: {path_prefixes: [/strict/]}
    key: path
    consistency: strict
    on_error: closed
    policies: [{algorithm: fixed_window, limit: 4, window: 1h}]
  - name: node
    match: {path_prefixes: [/local/]}
    key: path
    consistency: local
    nodes: 2
    policies: [{algorithm: fixed_window, limit: 4, window: 1h}]
  - name: synced
    match: {path_prefixes: [/eventual/]}
    key: path
    consistency: eventual
    sync_interval: 20ms
    policies: [{algorithm: fixed_window, limit: 4, window: 1h}]
  - name: plain
    match: {path_prefixes: [/plain/]}
    key: path
    policies: [{algorithm: fixed_window, limit: 4, window: 1h}]
`
	a, b := startServe(t, cfg), startServe(t, cfg)
	codes := func(ps []*proc, path string, n int) string {
		t.Helper()
		var out []string
		for i := range n {
			p := ps[i%len(ps)]
			start := time.Now()
			resp, _ := get(t, p.url(path))
			if d := time.Since(start); d >= 2*time.Second {
				t.Errorf("%s took %v", path, d)
			}
			out = append(out, fmt.Sprint(resp.StatusCode))
		}
		return strings.Join(out, " ")
	}
	both := []*proc{a, b}

	// Redis up: strict is one count over both gateways; local is each
	// gateway's half.
	if got := codes(both, "/strict/a", 6); got != "200 200 200 200 429 429" {
		t.Fatalf("strict across two gateways: %s", got)
	}
	if got := codes([]*proc{a}, "/local/a", 3); got != "200 200 429" {
		t.Fatalf("local on gateway a: %s, want its share of 2", got)
	}
	if got := codes([]*proc{b}, "/local/a", 3); got != "200 200 429" {
		t.Fatalf("local on gateway b: %s, want its own share of 2", got)
	}
	// Eventual: gateway a admits its 4 locally and pushes them to Redis.
	// b's first view of the key is empty: it admits, pushes that at its
	// next sync and pulls a's 4 in the same round trip, then refuses,
	// well before its own count reaches the limit (b refusing only at
	// its own 4 would pass without any sync: the check waited for b to
	// refuse, and raced a's push).
	if got := codes([]*proc{a}, "/eventual/a", 5); got != "200 200 200 200 429" {
		t.Fatalf("eventual on gateway a: %s", got)
	}
	eventually(t, "gateway a to push its 4 admissions to Redis", func() bool { return syncedCount(t, rs, "/eventual/a") == 4 })
	for atB := 0; ; {
		resp, _ := get(t, b.url("/eventual/a"))
		if resp.StatusCode == 429 {
			break
		}
		if atB++; atB == 4 {
			t.Fatal("gateway b admitted 4 of its own on a key a had used up: a's admissions did not reach b")
		}
		eventually(t, "gateway b to sync", func() bool { return syncedCount(t, rs, "/eventual/a") == int64(4+atB) })
	}
	keys := rs.CLI(t, "--scan", "--pattern", "e2e:*")
	if !strings.Contains(keys, "exact") || !strings.Contains(keys, "synced") || strings.Contains(keys, "node") {
		t.Fatalf("Redis keys %q: want the strict and eventual rules', not the local rule's", keys)
	}

	// Redis down: the strict rule refuses (a fresh key, far from its
	// limit), the local and eventual rules keep counting, the default rule decides in
	// memory (top-level on_error local).
	rs.Kill()
	if got := codes([]*proc{a}, "/strict/b", 4); got != "429 429 429 429" {
		t.Fatalf("strict on_error closed with Redis down: %s", got)
	}
	if got := codes([]*proc{a}, "/local/c", 3); got != "200 200 429" {
		t.Fatalf("local with Redis down: %s", got)
	}
	if got := codes([]*proc{a}, "/eventual/f", 5); got != "200 200 200 200 429" {
		t.Fatalf("eventual with Redis down: %s", got)
	}
	if got := codes([]*proc{a}, "/plain/d", 5); got != "200 200 200 200 429" {
		t.Fatalf("default rule (on_error local) with Redis down: %s", got)
	}

	// Redis back: the strict rule admits again once the breaker's probe
	// succeeds.
	rs.Restart(t)
	// Each gateway's connections find out about the restart one by one,
	// so wait for a few admissions in a row on each (fresh keys).
	probe := 0
	for _, p := range both {
		ok := 0
		eventually(t, "the strict rule to admit after Redis restarts", func() bool {
			probe++
			if resp, _ := get(t, p.url(fmt.Sprintf("/strict/probe%d", probe))); resp.StatusCode == 200 {
				ok++
			} else {
				ok = 0
			}
			return ok == 5
		})
	}
	if got := codes(both, "/strict/e", 5); got != "200 200 200 200 429" {
		t.Fatalf("strict after recovery: %s", got)
	}
}

// syncedCount is the count Redis holds for the eventual rule "synced"'s
// key key (its fixed window's state "window count idle"), 0 for none.
func syncedCount(t *testing.T, rs *redistest.Server, key string) int64 {
	t.Helper()
	var names []string
	for _, k := range strings.Fields(rs.CLI(t, "--scan", "--pattern", "e2e:*synced*")) {
		if strings.Contains(k, key) {
			names = append(names, k)
		}
	}
	switch len(names) {
	case 0:
		return 0
	case 1:
	default:
		t.Fatalf("Redis keys %q: want one for the eventual rule's %s", names, key)
	}
	f := strings.Fields(rs.CLI(t, "get", names[0]))
	if len(f) != 3 {
		t.Fatalf("the eventual rule's state %q: want a fixed window's \"window count idle\"", f)
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
