package main

import (
	"fmt"
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
func TestE2EConsistencyTiers(t *testing.T) {
	rs := redistest.Start(t)
	srv, _ := origin(t)
	cfg := baseCfg + "routes: [{path: /, upstream: \"" + srv.URL + "\"}]\n" +
		"store: {redis: {url: \"redis://" + rs.Addr + "\", prefix: \"e2e:\", timeout: 100ms}}\non_error: local\n" +
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
			if d := time.Since(start); d > 2*time.Second {
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
	// Eventual: gateway a admits its 4 locally; once a has pushed and b
	// has pulled, b refuses too.
	if got := codes([]*proc{a}, "/eventual/a", 5); got != "200 200 200 200 429" {
		t.Fatalf("eventual on gateway a: %s", got)
	}
	eventually(t, "gateway b to see a's admissions", func() bool {
		resp, _ := get(t, b.url("/eventual/a"))
		return resp.StatusCode == 429
	})
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
