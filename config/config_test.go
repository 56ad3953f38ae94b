package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

func TestDefaultIsValid(t *testing.T) {
	c := Default()
	if c.Listen.Addr != ":8080" || c.Admin.Addr != "127.0.0.1:9090" {
		t.Fatalf("listeners = %q, %q", c.Listen.Addr, c.Admin.Addr)
	}
	if c.Store.Memory == nil || len(c.Rules) != 1 || c.Routes[0].Upstream != "demo" {
		t.Fatalf("default = %+v", c)
	}
	p, err := c.Rules[0].Policy.Build()
	if err != nil {
		t.Fatal(err)
	}
	if want := (limit.TokenBucket{Rate: limit.Per(10, time.Second), Burst: 20}); p != want {
		t.Fatalf("policy = %v, want %v", p, want)
	}
}

func TestEmptyFileGetsDefaults(t *testing.T) {
	c, err := Parse("empty.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen.Addr != ":8080" || *c.Reload.Watch != true || c.Refusal.Status != 429 {
		t.Fatalf("defaults not filled: %+v", c)
	}
}

// Every problem in the file is reported at once, each at its line.
func TestAllErrorsAtOnceWithLines(t *testing.T) {
	src := `listen:
  addr: ":8080"
  raed_timeout: 5s
admin:
  addr: 8080
rules:
  - name: a
    algorithm: token_bucket
    rate: 0/s
  - name: b
    algorithm: token_bucket
    rate: 10/s
    burst: -1
  - name: c
    algorithm: leaky_buckt
    rate: 10/s
  - name: d
    rate: 10/s
    shadow: "yes"
client_ip:
  trusted_proxies: [10.0.0.0/33]
`
	_, err := Parse("bad.yaml", []byte(src))
	if err == nil {
		t.Fatal("no error")
	}
	got := Problems(err)
	want := []struct {
		line int
		text string
	}{
		{3, `unknown key "raed_timeout" (did you mean "read_timeout"?)`},
		{19, `want true or false`},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(got), len(want), err)
	}
	for i, w := range want {
		if got[i].Pos.Line != w.line || !strings.Contains(got[i].Msg, w.text) || got[i].Pos.File != "bad.yaml" {
			t.Errorf("problem %d = %v, want line %d containing %q", i, got[i], w.line, w.text)
		}
	}
	// Decoding is clean once the type errors are fixed: validation then
	// reports every impossible value at once.
	src = strings.Replace(src, "  raed_timeout: 5s\n", "", 1)
	src = strings.Replace(src, `shadow: "yes"`, "shadow: true", 1)
	src = strings.Replace(src, "addr: 8080", `addr: "127.0.0.1:8080"`, 1)
	_, err = Parse("bad.yaml", []byte(src))
	got = Problems(err)
	want = []struct {
		line int
		text string
	}{
		{4, "must not share the traffic listener's port"},
		{8, "rate"},
		{12, "burst -1 must not be negative"},
		{14, "unknown algorithm"},
		{20, `"10.0.0.0/33" is not a CIDR`},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(got), len(want), err)
	}
	for i, w := range want {
		if got[i].Pos.Line != w.line || !strings.Contains(got[i].Msg, w.text) {
			t.Errorf("problem %d = %v, want line %d containing %q", i, got[i], w.line, w.text)
		}
	}
	if !strings.Contains(err.Error(), "bad.yaml:8:") {
		t.Errorf("error text lacks file:line: %v", err)
	}
}

func TestImpossibleValues(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"rate zero":        "rules: [{name: r, rate: 0/s}]",
		"burst negative":   "rules: [{name: r, rate: 1/s, burst: -3}]",
		"unknown alg":      "rules: [{name: r, algorithm: gcra, rate: 1/s}]",
		"bad cidr":         "client_ip: {trusted_proxies: [not-an-ip]}",
		"missing file":     "rules: [{name: r, tiers: {plans: {free: {rate: 1/s}}, default: free, file: nope.yaml}}]",
		"missing tls":      "listen: {tls: {cert: c.pem, key: k.pem}}",
		"window no limit":  "rules: [{name: r, algorithm: fixed_window, window: 1m}]",
		"extra parameter":  "rules: [{name: r, algorithm: fixed_window, limit: 5, window: 1m, burst: 3}]",
		"dup rule":         "rules: [{name: r, rate: 1/s}, {name: r, rate: 2/s}]",
		"bad key":          "rules: [{name: r, rate: 1/s, key: cookie}]",
		"bad upstream":     "routes: [{path: /, upstream: 'ftp://x'}]",
		"both stores":      "store: {memory: {}, redis: {url: 'redis://x:6379'}}",
		"status 200":       "refusal: {status: 200}",
		"unknown top":      "rulez: []",
		"wrong type list":  "rules: {name: r}",
		"dup key":          "listen: {addr: ':1', addr: ':2'}",
		"syntax":           "listen: [",
		"tiers and inline": "rules: [{name: r, rate: 1/s, tiers: {plans: {free: {rate: 1/s}}, default: free}}]",
		"default plan":     "rules: [{name: r, tiers: {plans: {free: {rate: 1/s}}, default: pro}}]",
		"negative cost":    "rules: [{name: r, rate: 1/s, cost: -1}]",
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(filepath.Join(dir, "c.yaml"), []byte(src))
			if err == nil {
				t.Fatalf("%s: accepted", src)
			}
			for _, p := range Problems(err) {
				if p.Pos.Line == 0 {
					t.Errorf("problem without a line: %v", p)
				}
			}
		})
	}
}

func TestTiersFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "plans.yaml"), []byte("key-a: pro\nkey-b: free\n"), 0o644)
	src := `rules:
  - name: api
    key: header:X-API-Key
    tiers:
      default: free
      plans:
        free: {rate: 10/m}
        pro: {rate: 100/s, burst: 200}
      assign: {key-c: pro}
      file: plans.yaml
`
	c, err := Parse(filepath.Join(dir, "c.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got := c.Rules[0].Tiers.Assigned()
	if len(got) != 3 || got["key-a"] != "pro" || got["key-c"] != "pro" {
		t.Fatalf("assigned = %v", got)
	}
	os.WriteFile(filepath.Join(dir, "plans.yaml"), []byte("key-a: gold\n"), 0o644)
	_, err = Parse(filepath.Join(dir, "c.yaml"), []byte(src))
	ps := Problems(err)
	if len(ps) != 1 || ps[0].Pos.File != filepath.Join(dir, "plans.yaml") || ps[0].Pos.Line != 1 {
		t.Fatalf("problems = %v", ps)
	}
}
