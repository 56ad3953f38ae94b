package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/store/redis/redisconf"
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

// A file with no YAML document (empty, blank, only comments, null) is an
// error naming the file, not a configuration of defaults: a file truncated
// while the gateway watches it must not drop every route and rule.
func TestEmptyFileIsAnError(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"empty":    "",
		"blank":    " \n\t\n",
		"comments": "# routes and rules\n\n# go here\n",
		"marker":   "---\n",
		"null":     "~\n",
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, name+".yaml")
			if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := Load(file)
			if err == nil {
				t.Fatalf("%q loaded as %+v", src, c)
			}
			ps := Problems(err)
			if len(ps) != 1 || ps[0].Pos.File != file || !strings.Contains(ps[0].Msg, "no configuration") {
				t.Fatalf("%q: %v", src, err)
			}
			if !strings.HasPrefix(err.Error(), file+": ") {
				t.Errorf("error does not start with the file name: %v", err)
			}
		})
	}
	if _, err := Parse("empty.yaml", nil); err == nil || err.Error() != "empty.yaml: the file is empty: no configuration" {
		t.Errorf("Parse of no data: %v", err)
	}
	// An explicit empty mapping is a choice: all defaults.
	c, err := Parse("defaults.yaml", []byte("{}\n"))
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
		// Validated with the rest: rule d has no policies.
		{9, "rules[1]: no policies and no tiers"},
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
		{8, "choose one of memory or redis"}, // at the store key
		{11, "directory /nonexistent-dir does not exist"},
		{11, `format "xml"`},
	})
}

// An upstream URL with credentials (which would be shown by /config and
// never sent) or a port out of range is refused at its line, with every
// other problem, and the password is not echoed.
func TestUpstreamURLValidation(t *testing.T) {
	src := `routes:
  - path: /a
    upstream: "http://user:hunter2@h/x"
  - path: /b
    upstream: http://h:99999
  - path: /c
    upstream: "http://h:0/"
  - path: /d
    upstream: "ftp://user:hunter2@h"
  - path: /e
    upstream: "http://[::1]:65536"
  - path: /f
    upstream: "http://user:hunter2@h:bad"
  - {path: /g, upstream: "https://h:65535/x"}
  - {path: /h, upstream: "http://[::1]:1"}
  - {path: /i, upstream: "http://h"}
`
	_, err := Parse("c.yaml", []byte(src))
	checkProblems(t, err, []want{
		{3, "routes[0].upstream: credentials in the URL are not supported (the gateway would not send them to the upstream)"},
		{5, `routes[1].upstream "http://h:99999": port "99999" is not a number from 1 to 65535`},
		{7, `port "0" is not a number from 1 to 65535`},
		{9, "routes[3].upstream: credentials in the URL are not supported"},
		{11, `port "65536" is not a number from 1 to 65535`},
		{13, "routes[5].upstream: "},
	})
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the password is echoed: %v", err)
	}
	if !strings.Contains(err.Error(), "c.yaml:3:5: routes[0].upstream: credentials") {
		t.Errorf("error text lacks file:line:col: %v", err)
	}
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

// parseWithMembersFile parses a file in a temporary directory whose one
// rule's tiers read members.txt (key-a is pro) beside it, relative.
func parseWithMembersFile(t *testing.T) (*Config, string) {
	t.Helper()
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
	return c, dir
}

func TestRelativePathsResolved(t *testing.T) {
	c, dir := parseWithMembersFile(t)
	rc, err := c.EngineConfig()
	if err != nil {
		t.Fatal(err)
	}
	if got := rc.Rules[0].Tiers; got.MembersFile != filepath.Join(dir, "members.txt") || got.FileMembers["key-a"] != "pro" {
		t.Fatalf("the engine's members_file = %q, members %v", got.MembersFile, got.FileMembers)
	}
	if got := c.Rules[0].Tiers.MembersFile; got != "members.txt" {
		t.Fatalf("the file's members_file became %q", got)
	}
	if k := c.Rules[0].Key; len(k) != 1 || k[0] != "header:X-API-Key" {
		t.Fatalf("a scalar key must read as a one-element list, got %q", k)
	}
}

// Masked hides the password of a route's upstream URL, which validation
// refuses but a Config built in code may hold, without changing c.
func TestMaskedRouteUpstream(t *testing.T) {
	c := Default()
	c.Routes = []Route{{Path: "/", Upstream: "http://user:hunter2@h/x"}, {Path: "/d", Upstream: "demo"}}
	out, err := c.Masked()
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if strings.Contains(s, "hunter2") || !strings.Contains(s, "http://user:xxxxx@h/x") || !strings.Contains(s, "upstream: demo") {
		t.Fatalf("masked config:\n%s", s)
	}
	if c.Routes[0].Upstream != "http://user:hunter2@h/x" {
		t.Fatal("Masked changed the running configuration")
	}
}

// Masked hides the password of a URL that does not parse too (which
// validation refuses, but a Config built in code may hold).
func TestMaskedUnparseableURL(t *testing.T) {
	c := Default()
	c.Store.Memory, c.Store.Redis = nil, &redisconf.Config{URL: "redis://u:hunter2@h:6379/%zz"}
	c.Routes = []Route{{Path: "/", Upstream: "http://u:hunter2@h/%zz"}, {Path: "/b", Upstream: "http://h/%zz"}}
	out, err := c.Masked()
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); strings.Contains(s, "hunter2") || !strings.Contains(s, "http://h/%zz") {
		t.Fatalf("masked config:\n%s", s)
	}
}

// Redis addresses with a port out of range are refused at their line.
func TestRedisPortValidation(t *testing.T) {
	src := `store:
  redis:
    url: "redis://localhost:70000"
    cluster: ["h1:6379", "h2:0", "h3:"]
`
	_, err := Parse("c.yaml", []byte(src))
	checkProblems(t, err, []want{
		{3, `store.redis.url: port "70000" is not a number from 1 to 65535`},
		{4, `store.redis.cluster[1] "h2:0": want host:port, the port from 1 to 65535`},
		{4, `store.redis.cluster[2] "h3:": want host:port`},
	})
}

// A Redis URL that does not parse is a problem at its line, never a
// crash (validation once read the parsed URL after url.Parse failed), and
// its password is not echoed. A bare host:port is asked for as a URL.
func TestUnparseableRedisURL(t *testing.T) {
	cases := []struct{ url, text string }{
		{"redis://127.0.0.1:6379/0%", `store.redis.url: invalid URL escape "%" (want redis://HOST:PORT`},
		{"redis://u:hunter2@127.0.0.1:6379/%zz", `store.redis.url: invalid URL escape "%zz"`},
		{"redis://[::1", "store.redis.url: missing ']' in host"},
		{"127.0.0.1:6379", `store.redis.url "127.0.0.1:6379": want a URL such as redis://127.0.0.1:6379`},
		{"localhost:6379", `store.redis.url "localhost:6379": want a URL such as redis://localhost:6379`},
		{"redis://h:6379/x", `store.redis.url: database "x" is not a number`},
	}
	for _, c := range cases {
		src := "store:\n  redis:\n    url: \"" + c.url + "\"\n"
		_, err := Parse("c.yaml", []byte(src))
		checkProblems(t, err, []want{{3, c.text}})
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the password is echoed: %v", err)
		}
	}
	// The one-line form of the report.
	_, err := Parse("x.yaml", []byte(`store: {redis: {url: "redis://127.0.0.1:6379/0%"}}`+"\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "x.yaml:1:17: store.redis.url: invalid URL escape") {
		t.Fatalf("err = %v", err)
	}
}

// An upstream written as a bare host:port, which net/url either fails to
// parse ("first path segment in URL cannot contain colon") or reads as a
// URL whose scheme is the host, is asked for as http://HOST:PORT.
func TestHostPortUpstreamAsksForURL(t *testing.T) {
	src := `routes:
  - {path: /a, upstream: "127.0.0.1:3000"}
  - {path: /b, upstream: "localhost:3000"}
  - {path: /c, upstream: "[::1]:3000"}
  - {path: /d, upstream: "/just/a/path"}
`
	_, err := Parse("c.yaml", []byte(src))
	checkProblems(t, err, []want{
		{2, `routes[0].upstream "127.0.0.1:3000": want a URL such as http://127.0.0.1:3000`},
		{3, `routes[1].upstream "localhost:3000": want a URL such as http://localhost:3000`},
		{4, `routes[2].upstream "[::1]:3000": want a URL such as http://[::1]:3000`},
		{5, `scheme must be http or https (want http://HOST:PORT)`},
	})
	if strings.Contains(err.Error(), "first path segment") {
		t.Errorf("net/url's message leaks through: %v", err)
	}
}

// A number where a whole number is wanted says what is wrong with it:
// too large or too small for the field (YAML reads an integer too long
// for 64 bits as a float), or not whole.
func TestWholeNumberProblems(t *testing.T) {
	cases := []struct{ value, text string }{
		{"99999999999999999999", "limit: 99999999999999999999 is too large (the largest is 9223372036854775807)"},
		{"18446744073709551616", "limit: 18446744073709551616 is too large"},
		{"9223372036854775808", "limit: 9223372036854775808 is too large"},
		{"-99999999999999999999", "limit: -99999999999999999999 is too small (the least is -9223372036854775808)"},
		{"1.5", "limit: 1.5 is not a whole number"},
		{"1e3", "limit: want a whole number written in digits, got 1e3"},
		{".inf", "limit: .inf is too large"},
		{".nan", `limit: ".nan" is not a number`},
		{"many", `limit: want a whole number, got the string "many"`},
	}
	for _, c := range cases {
		src := "rules:\n  - name: r\n    policies:\n      - algorithm: fixed_window\n        window: 1s\n        limit: " + c.value + "\n"
		_, err := Parse("c.yaml", []byte(src))
		checkProblems(t, err, []want{{6, c.text}})
	}
	_, err := Parse("c.yaml", []byte("rules: [{name: r, policies: [{rate: 1/s, burst: 1.5}]}]\n"))
	checkProblems(t, err, []want{{1, "rules[0].policies[0].burst: 1.5 is not a whole number"}})
}

// A misspelt word where the file takes one of a few is answered with the
// word it was probably meant to be, at its line.
func TestMisspeltWordsSuggested(t *testing.T) {
	src := `rules:
  - name: r
    policies:
      - algorithm: token_bukket
        rate: 1/s
on_error: opne
access_log: {path: "-", format: jsn}
`
	_, err := Parse("c.yaml", []byte(src))
	checkProblems(t, err, []want{
		{4, `rules[0].policies[0].algorithm: unknown algorithm "token_bukket" (did you mean "token_bucket"?)`},
		{6, `on_error: "opne": want open, closed or local (did you mean "open"?)`},
		{7, `access_log.format "jsn": want json or combined (did you mean "json"?)`},
	})
}

// A file without routes sends every request to the built-in demo origin:
// it loads, with a warning that says so, at the routes key when one is
// written. A file with routes, one that routes to demo on purpose, and the
// embedded default have none.
func TestNoRoutesWarns(t *testing.T) {
	c, err := Parse("c.yaml", []byte("rules: [{name: r, policies: [{rate: 1/s}]}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	ws := c.Warnings()
	if len(ws) != 1 || ws[0].Pos.File != "c.yaml" || !strings.HasPrefix(ws[0].Error(), "c.yaml: warning: no routes: every request goes to the built-in demo origin") {
		t.Fatalf("warnings = %v", ws)
	}
	if len(c.Routes) != 1 || c.Routes[0].Upstream != "demo" {
		t.Fatalf("routes = %+v", c.Routes)
	}
	c, err = Parse("c.yaml", []byte("listen: {addr: ':8080'}\nroutes: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	if ws := c.Warnings(); len(ws) != 1 || ws[0].Pos.Line != 2 || !strings.Contains(ws[0].Msg, "no routes") {
		t.Fatalf("warnings = %v", ws)
	}
	for _, src := range []string{
		"routes: [{path: /, upstream: 'http://127.0.0.1:3000'}]\n",
		"routes: [{path: /, upstream: demo}]\n",
	} {
		c, err := Parse("c.yaml", []byte(src))
		if err != nil || len(c.Warnings()) != 0 {
			t.Errorf("%q: %v, warnings %v", src, err, c.Warnings())
		}
	}
	if ws := Default().Warnings(); len(ws) != 0 {
		t.Errorf("the embedded default warns: %v", ws)
	}
}

// An empty list element ("-" alone) is a value missing its keys, and
// what is missing is reported at its line. A section left empty
// ("redis:" and nothing under it) is that section with nothing set, not
// the section silently left out; an explicit null leaves it out.
func TestEmptyValuesProblemsHaveLines(t *testing.T) {
	_, err := Parse("c.yaml", []byte("listen:\n  tls:\nroutes:\n  -\n  - {path: /b}\nstore:\n  redis:\n"))
	checkProblems(t, err, []want{
		{2, "listen.tls.cert is required"},
		{2, "listen.tls.key is required"},
		{4, "routes[0].upstream is required"},
		{5, "routes[1].upstream is required"},
		{7, "store.redis.url is required"},
	})
	c, err := Parse("c.yaml", []byte("listen: {tls: ~}\nstore: {redis: null, memory: {max_keys: 10}}\n"))
	if err != nil || c.Listen.TLS != nil || c.Store.Redis != nil {
		t.Fatalf("explicit nulls: %v, %+v", err, c)
	}
}

// TestStoreDefaultsAreTheStoresOwn checks that the configuration's store
// defaults are the stores' own (one definition each).
func TestStoreDefaultsAreTheStoresOwn(t *testing.T) {
	c := &Config{Store: Store{Redis: &redisconf.Config{URL: "redis://127.0.0.1:6379"}}}
	c.Defaults()
	if c.Store.Redis.Timeout != redisconf.DefaultTimeout {
		t.Errorf("store.redis.timeout defaults to %v, the store to %v", c.Store.Redis.Timeout, redisconf.DefaultTimeout)
	}
	c = &Config{}
	c.Defaults()
	if c.Store.Memory.MaxKeys != memory.DefaultMaxKeys {
		t.Errorf("store.memory.max_keys defaults to %d, the store to %d", c.Store.Memory.MaxKeys, memory.DefaultMaxKeys)
	}
}

// TestRuleProblemPlacedByItsPath checks that a problem the rule engine
// finds is placed at its field's line by the path it carries, even when
// the path holds ": " (a quoted plan name), so that cutting the message
// at its first ": " would place it elsewhere.
func TestRuleProblemPlacedByItsPath(t *testing.T) {
	src := `rules:
  - name: api
    key: header:X-API-Key
    tiers:
      default: free
      plans:
        free: [{rate: 10/m}]
        "pro: gold": [{rate: 100/s}]
`
	_, err := Parse("c.yaml", []byte(src))
	ps := Problems(err)
	if len(ps) == 0 {
		t.Fatal("want a problem with the plan name")
	}
	for _, p := range ps {
		if strings.Contains(p.Msg, "pro: gold") && p.Pos.Line != 8 {
			t.Errorf("%v: want line 8", p)
		}
	}
}

// TestValidateLeavesConfigUnchanged checks that validation reads the
// configuration and never rewrites it (a relative members_file stays as
// written).
func TestValidateLeavesConfigUnchanged(t *testing.T) {
	c, _ := parseWithMembersFile(t)
	c.Rules[0].Tiers.MembersFile = "members.txt" // as written, relative
	before := *c
	before.Rules = slices.Clone(c.Rules)
	tiers := *c.Rules[0].Tiers
	before.Rules[0].Tiers = &tiers
	ps := &problems{}
	c.validate(ps)
	if err := ps.Err(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&before, c) {
		t.Fatalf("validation changed the config:\nbefore %+v\nafter  %+v", before.Rules[0].Tiers, c.Rules[0].Tiers)
	}
}

// TestMembersFileReadByConfig checks that the configuration reads a
// members_file, relative to its own directory, and places a problem in it
// at the members_file line, naming the file's line (never the identity).
func TestMembersFileReadByConfig(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "members.txt"), []byte("secret-key pro extra\n"), 0o644)
	src := `rules:
  - name: api
    key: header:X-API-Key
    tiers:
      default: free
      plans:
        free: [{rate: 10/m}]
      members_file: members.txt
`
	_, err := Parse(filepath.Join(dir, "c.yaml"), []byte(src))
	ps := Problems(err)
	if len(ps) != 1 || ps[0].Pos.Line != 8 || !strings.Contains(ps[0].Msg, "members.txt:1:") || strings.Contains(ps[0].Msg, "secret-key") {
		t.Fatalf("problems %v: want one at line 8 naming members.txt:1", ps)
	}
}
