package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestCLIExitCodes(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("rules: [{name: r, policies: [{rate: 10/s}]}]\n"), 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("listen:\n  adr: x\nrules:\n  - name: r\n    policies: [{rate: 0/s}]\n"), 0o644)
	badURL := filepath.Join(dir, "bad-url.yaml")
	os.WriteFile(badURL, []byte(`store: {redis: {url: "redis://127.0.0.1:6379/0%"}}`+"\n"), 0o644)

	cases := []struct {
		args        []string
		code        int
		out, errOut string
	}{
		{nil, exitUsage, "", "usage: tollgate <command>"},
		{[]string{"nope"}, exitUsage, "", `unknown command "nope"`},
		{[]string{"--help"}, exitOK, "serve", ""},
		{[]string{"help", "check"}, exitOK, "", "usage: tollgate check [flags] FILE"},
		{[]string{"serve", "-h"}, exitOK, "", "-config file"},
		{[]string{"serve", "-bogus"}, exitUsage, "", "flag provided but not defined"},
		{[]string{"version"}, exitOK, "tollgate ", ""},
		{[]string{"check"}, exitUsage, "", "usage: tollgate check"},
		{[]string{"check", good}, exitOK, "valid", ""},
		{[]string{"check", "-q", good}, exitOK, "", ""},
		{[]string{"check", bad}, exitFail, "", bad + ":2:3: listen: unknown key \"adr\""},
		{[]string{"check", badURL}, exitFail, "", badURL + `:1:17: store.redis.url: invalid URL escape "%"`},
		{[]string{"check", filepath.Join(dir, "missing.yaml")}, exitFail, "", "no such file"},
	}
	for _, c := range cases {
		code, out, errOut := runCLI(c.args...)
		if code != c.code || !strings.Contains(out, c.out) || !strings.Contains(errOut, c.errOut) {
			t.Errorf("tollgate %q = %d\nstdout: %s\nstderr: %s\nwant %d, stdout containing %q, stderr containing %q",
				c.args, code, out, errOut, c.code, c.out, c.errOut)
		}
	}
}

// check reports every problem at once, each with file:line, and the
// summary of a valid file says what it will do.
func TestCheckSummaryAndAllProblems(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(`rules:
  - name: a
    policies: [{rate: 0/s}]
  - name: b
    policies: [{rate: 10/s, burst: -1}]
client_ip: {trusted_proxies: [10.0.0.0/33]}
`), 0o644)
	code, _, errOut := runCLI("check", bad)
	if code != exitFail {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{bad + ":3:", bad + ":5:", bad + ":6:", "3 problem(s)"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("check output lacks %q:\n%s", want, errOut)
		}
	}
	code, out, _ := runCLI("check", "../../examples/api-key-tiers.yaml")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"valid", "api-key", `default plan "free"`, "token_bucket rate 100/s burst 200", "per-ip-ceiling"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

func TestCheckSummaryNamesTiers(t *testing.T) {
	code, out, errOut := runCLI("check", "../../examples/consistency-tiers.yaml")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"tier   strict (one atomic Redis script per decision)\n    error  closed: refuse while the store fails (the rule's on_error)",
		"key    ip\n    error  local: decide in this gateway alone while the store fails (on_error)\n    limit  sliding_window limit 50000 per 1h",
		"tier   eventual (decided locally, synced with Redis every 50ms)\n    error  none: decided in this gateway, a Redis outage does not fail it",
		"tier   eventual (decided locally, synced with Redis every 50ms)",
		"tier   local (this gateway only, its 1/3 share of the limits)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// check prints the gossip section (where the key comes from, never the
// key) and each gossip rule's tier and warm-up answer.
func TestCheckSummaryNamesTheGossipTier(t *testing.T) {
	const key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	t.Setenv("TOLLGATE_GOSSIP_KEY", key)
	code, out, errOut := runCLI("check", "../../examples/gossip-fleet.yaml")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		`gossip   node "edge-1" on 127.0.0.1:7946, every 100ms, seeds 127.0.0.1:7946, 127.0.0.1:7947, 127.0.0.1:7948, encrypted (key from $TOLLGATE_GOSSIP_KEY)`,
		"tier   gossip (decided locally, counters shared with the fleet by store.gossip)\n    error  closed: refuse until this gateway has exchanged state with the fleet (the rule's on_error)",
		"error  local: decide in this gateway alone until this gateway has exchanged state with the fleet (on_error)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+errOut, key) {
		t.Error("check prints the secret key")
	}
}

// A file without routes is valid but proxies every request to the
// built-in demo origin: check says so on stderr, -q or not, and its
// summary marks the route.
func TestCheckWarnsWithoutRoutes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "no-routes.yaml")
	os.WriteFile(file, []byte("rules: [{name: r, policies: [{rate: 10/s}]}]\n"), 0o644)
	for _, args := range [][]string{{"check", file}, {"check", "-q", file}} {
		code, out, errOut := runCLI(args...)
		if code != exitOK || !strings.Contains(errOut, file+": warning: no routes: every request goes to the built-in demo origin") {
			t.Errorf("tollgate %q = %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
		}
	}
	_, out, _ := runCLI("check", file)
	if !strings.Contains(out, "*/ -> demo (the built-in demo origin") {
		t.Errorf("summary does not mark the demo route:\n%s", out)
	}
	_, _, errOut := runCLI("check", "../../examples/per-ip-api.yaml")
	if strings.Contains(errOut, "warning") {
		t.Errorf("a file with routes warns: %s", errOut)
	}
}
