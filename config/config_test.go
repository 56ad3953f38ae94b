package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultIsValid(t *testing.T) {
	c := Default()
	if c.Listen.Addr != ":8080" || c.Admin.Addr != "127.0.0.1:9090" {
		t.Fatalf("listeners = %q, %q", c.Listen.Addr, c.Admin.Addr)
	}
	if c.Store.Memory == nil || len(c.Rules) != 1 || c.Routes[0].Upstream != "demo" {
		t.Fatalf("default = %+v", c)
	}
	r := c.Rules[0]
	if r.Name != "per-ip" || len(r.Key) != 1 || r.Key[0] != "ip" || len(r.Policies) != 1 ||
		r.Policies[0].Rate != "5/s" || r.Policies[0].Burst != 10 {
		t.Fatalf("rule = %+v", r)
	}
}

func TestEmptyFileGetsDefaults(t *testing.T) {
	c, err := Parse("empty.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen.Addr != ":8080" || *c.Reload.Watch != true || c.Store.Memory.MaxKeys != 1_000_000 {
		t.Fatalf("defaults not filled: %+v", c)
	}
}

type want struct {
	line int
	text string
}

func checkProblems(t *testing.T, err error, wants []want) {
	t.Helper()
	got := Problems(err)
	if len(got) != len(wants) {
		t.Fatalf("got %d problems, want %d:\n%v", len(got), len(wants), err)
	}
	for i, w := range wants {
		if got[i].Pos.Line != w.line || !strings.Contains(got[i].Msg, w.text) {
			t.Errorf("problem %d = %v, want line %d containing %q", i, got[i], w.line, w.text)
		}
	}
}

// Every decoding problem in the file is reported at once, each at its line.
func TestDecodingErrorsAllAtOnce(t *testing.T) {
	src := `listen:
  addr: ":8080"
  raed_timeout: 5s
admin:
  addr: [8080]
rules:
  - name: a
    policies: [{rate: 10/s, burst: many}]
  - name: d
    shadow: "yes"
    limits: []
upstream:
  max_conns: 10
  max_conns: 20
`
	_, err := Parse("bad.yaml", []byte(src))
	checkProblems(t, err, []want{
		{3, `unknown key "raed_timeout" (did you mean "read_timeout"?)`},
		{5, "want a string"},
		{8, "want a whole number"},
		{10, "want true or false"},
		{11, `unknown key "limits"`},
		{14, `duplicate key "max_conns"`},
	})
	if !strings.Contains(err.Error(), "bad.yaml:3:3: listen: unknown key") {
		t.Errorf("error text lacks file:line:col: %v", err)
	}
}

// The gateway's own impossible values, reported at once.
func TestGatewayValidation(t *testing.T) {
	src := `listen:
  addr: ":8080"
  tls: {cert: missing.pem, key: missing-key.pem}
admin:
  addr: "127.0.0.1:8080"
routes:
  - {path: api, upstream: "ftp://x"}
store:
  memory: {}
  redis: {url: "redis://localhost:6379"}
access_log: {path: /nonexistent-dir/x.log, format: xml}
`
	_, err := Parse(filepath.Join(t.TempDir(), "c.yaml"), []byte(src))
	checkProblems(t, err, []want{
		{3, "listen.tls.cert"},
		{3, "listen.tls.key"},
		{5, "must not share the traffic listener's port"},
		{7, `must start with /`},
		{7, "scheme must be http or https"},
		{9, "choose one of memory or redis"},
		{11, "directory /nonexistent-dir does not exist"},
		{11, `format "xml"`},
	})
}

// The rule engine's problems land on the line of the value at fault.
func TestRuleErrorsHaveLines(t *testing.T) {
	src := `rules:
  - name: a
    policies:
      - rate: 0/s
  - name: b
    policies:
      - {rate: 10/s, burst: -1}
  - name: c
    policies:
      - algorithm: leaky_buckt
        rate: 10/s
client_ip:
  trusted_proxies: [10.0.0.0/33]
`
	_, err := Parse("bad.yaml", []byte(src))
	got := Problems(err)
	if len(got) < 4 {
		t.Fatalf("want at least 4 problems, got:\n%v", err)
	}
	for _, p := range got {
		if p.Pos.Line < 3 {
			t.Errorf("problem not placed on its line: %v", p)
		}
	}
}

func TestImpossibleValues(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"rate zero":      "rules: [{name: r, policies: [{rate: 0/s}]}]",
		"burst negative": "rules: [{name: r, policies: [{rate: 1/s, burst: -3}]}]",
		"unknown alg":    "rules: [{name: r, policies: [{algorithm: gcra, rate: 1/s}]}]",
		"bad cidr":       "client_ip: {trusted_proxies: [not-an-ip]}",
		"missing file":   "rules: [{name: r, tiers: {plans: {free: [{rate: 1/s}]}, default: free, members_file: nope.txt}}]",
		"dup rule":       "rules: [{name: r, policies: [{rate: 1/s}]}, {name: r, policies: [{rate: 2/s}]}]",
		"status 200":     "refusal: {status: 200}",
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

func TestDecodingRejects(t *testing.T) {
	cases := map[string]string{
		"unknown top":     "rulez: []",
		"wrong type list": "rules: {name: r}",
		"dup key":         "listen: {addr: ':1', addr: ':2'}",
		"syntax":          "listen: [",
		"negative dur":    "upstream: {dial_timeout: -1s}",
		"bad duration":    "upstream: {dial_timeout: soon}",
		"not a mapping":   "listen: 8080",
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(src))
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

func TestRelativePathsResolved(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "members.txt"), []byte("key-a pro\n"), 0o644)
	src := `rules:
  - name: api
    key: header:X-API-Key
    tiers:
      default: free
      plans:
        free: [{rate: 10/m}]
        pro: [{rate: 100/s, burst: 200}]
      members_file: members.txt
`
	c, err := Parse(filepath.Join(dir, "c.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Rules[0].Tiers.MembersFile; got != filepath.Join(dir, "members.txt") {
		t.Fatalf("members_file = %q", got)
	}
	if k := c.Rules[0].Key; len(k) != 1 || k[0] != "header:X-API-Key" {
		t.Fatalf("a scalar key must read as a one-element list, got %q", k)
	}
}
