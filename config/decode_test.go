package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A second YAML document is an error at its line, not silently ignored.
func TestSecondDocumentIsAnError(t *testing.T) {
	src := "rules:\n  - name: a\n    policies:\n      - rate: 5/s\n---\nlisten:\n  addr: \"bogus\"\nnot_a_key: 1\n"
	_, err := Parse("f.yaml", []byte(src))
	checkProblems(t, err, []want{
		{5, "a second YAML document: the configuration is one document"},
	})
	if !strings.HasPrefix(err.Error(), "f.yaml:5:") {
		t.Errorf("error lacks file:line: %v", err)
	}
	// A syntax error in a second document is reported.
	_, err = Parse("f.yaml", []byte("listen: {addr: \":8080\"}\n---\nrules: [\n"))
	checkProblems(t, err, []want{{3, "did not find expected node content"}})
	// One document, with or without its markers, is fine, and so is a
	// separator left at the end: an empty document holds nothing to
	// ignore.
	for _, src := range []string{
		"---\nlisten: {addr: \":8080\"}\n", "---\nlisten: {addr: \":8080\"}\n...\n",
		"listen: {addr: \":8080\"}\n---\n", "listen: {addr: \":8080\"}\n...\n---\n", "listen: {addr: \":8080\"}\n--- # end\n",
	} {
		if _, err := Parse("f.yaml", []byte(src)); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
}

// aliasBomb is the reviewer's 4 KB file: three levels of a hundred aliases,
// a million values once expanded.
func aliasBomb(n int) string {
	var b strings.Builder
	b.WriteString("rules:\n  - &r\n    name: a\n    policies: [{rate: 5/s}]\n    cost:\n      by:\n        - &c\n          cost: 1\n          match:\n            headers:\n              - &h {name: X}\n")
	for range n {
		b.WriteString("              - *h\n")
	}
	for range n {
		b.WriteString("        - *c\n")
	}
	for range n {
		b.WriteString("  - *r\n")
	}
	return b.String()
}

// Aliases expand within a budget: an alias bomb fails fast at an alias's
// line instead of taking seconds and gigabytes.
func TestAliasExpansionBounded(t *testing.T) {
	src := aliasBomb(100)
	done := make(chan error, 1)
	go func() {
		_, err := Parse("f.yaml", []byte(src))
		done <- err
	}()
	var err error
	// A watchdog for a hang only: unbounded, this file takes seconds and
	// gigabytes; bounded, the budget's few hundred thousand values. What
	// the test asserts is the budget's problem, not a time.
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("a %d-byte file still decoding after 20s (alias expansion unbounded)", len(src))
	}
	ps := Problems(err)
	if len(ps) != 1 || !strings.Contains(ps[0].Msg, "aliases expand past") {
		t.Fatalf("want one alias problem, got:\n%v", err)
	}
	if l := ps[0].Pos.Line; l <= 11 || !strings.Contains(strings.Split(src, "\n")[l-1], "*") {
		t.Errorf("problem not at an alias's line: %v", ps[0])
	}
}

// Anchors reused the ordinary way stay well within the budget.
func TestAliasesReusedDecode(t *testing.T) {
	var b strings.Builder
	b.WriteString("x-policy: &p\n  - {rate: 5/s, burst: 10}\n  - {algorithm: fixed_window, limit: 100, window: 1m}\nrules:\n")
	for i := range 200 {
		fmt.Fprintf(&b, "  - {name: r%d, policies: *p}\n", i)
	}
	// x-policy is not a key: the anchor has to live somewhere, and that
	// is an unknown key; everything else decodes.
	_, err := Parse("f.yaml", []byte(b.String()))
	ps := Problems(err)
	if len(ps) != 1 || !strings.Contains(ps[0].Msg, `unknown key "x-policy"`) {
		t.Fatalf("got:\n%v", err)
	}
	src := "rules:\n  - &r {name: a, policies: &p [{rate: 5/s}]}\n  - {name: b, policies: *p}\n  - {name: c, policies: *p, match: {methods: [GET]}}\n"
	c, err := Parse("f.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rules) != 3 || c.Rules[2].Policies[0].Rate != "5/s" {
		t.Fatalf("rules = %+v", c.Rules)
	}
}

// Decoding problems and validation problems are reported together, without
// the validation ones that only repeat a value that failed to decode.
func TestDecodingAndValidationAtOnce(t *testing.T) {
	src := "listen:\n  addr: \":8080\"\nbogus: 1\nrules:\n  - name: a\n    policies:\n      - rate: 0/s\n"
	_, err := Parse("f.yaml", []byte(src))
	checkProblems(t, err, []want{
		{3, `unknown key "bogus"`},
		{7, "rules[0].policies[0].rate: \"0/s\""},
	})

	cases := map[string]struct {
		src   string
		wants []want
	}{
		"wrong type not also required": {
			"routes: [{path: /x, upstream: [1]}]\n",
			[]want{{1, "routes[0].upstream: want a string"}},
		},
		"misspelled not also required": {
			"routes:\n  - path: x\n    upstrem: http://h\n",
			[]want{{2, "must start with /"}, {3, `unknown key "upstrem" (did you mean "upstream"?)`}},
		},
		"nested required": {
			"store: {redis: {url: [x]}}\n",
			[]want{{1, "store.redis.url: want a string"}},
		},
		"mapping of the wrong type": {
			"store: {redis: 5}\n",
			[]want{{1, "store.redis: want a mapping"}},
		},
		"policies of the wrong type": {
			"rules:\n  - name: a\n    policies: 5\n  - name: b\n    policies: [{rate: 0/s}]\n",
			[]want{{3, "rules[0].policies: want a list"}, {5, "rules[1].policies[0].rate"}},
		},
		"rate of the wrong type": {
			"rules:\n  - name: a\n    policies: [{rate: [1], burst: 5}]\n",
			[]want{{3, "rules[0].policies[0].rate: want a string"}},
		},
		"store of the wrong type": {
			"store: 5\nrules: [{name: a, consistency: strict, policies: [{rate: 1/s}]}]\n",
			[]want{{1, "store: want a mapping"}},
		},
		"sibling still validated": {
			"listen:\n  tls: {cert: [x]}\n  max_conns: -1\n",
			[]want{{2, "listen.tls.key is required"}, {2, "listen.tls.cert: want a string"}, {3, "listen.max_conns -1 must not be negative"}},
		},
		"document not a mapping": {
			"- a\n- b\n",
			[]want{{1, "the document: want a mapping"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(tc.src))
			checkProblems(t, err, tc.wants)
		})
	}
}

// A boolean is true, True, TRUE, false, False or FALSE, whatever its tag:
// YAML 1.1's yes, on, y... are errors, not false.
func TestBoolOnlyCoreValues(t *testing.T) {
	for _, v := range []string{"!!bool yes", "!!bool on", "!!bool no", "!!bool y", "!!bool 1", "!!bool tRUE", "yes", "\"true\"", "!!str true"} {
		_, err := Parse("f.yaml", []byte("reload:\n  watch: "+v+"\n"))
		checkProblems(t, err, []want{{2, "reload.watch: "}})
	}
	for v, want := range map[string]bool{"true": true, "True": true, "TRUE": true, "false": false, "False": false, "FALSE": false, "!!bool true": true, "!!bool FALSE": false} {
		c, err := Parse("f.yaml", []byte("reload:\n  watch: "+v+"\n"))
		if err != nil {
			t.Errorf("%s: %v", v, err)
			continue
		}
		if *c.Reload.Watch != want {
			t.Errorf("%s read as %v", v, *c.Reload.Watch)
		}
	}
}

// Tags outside YAML's core schema, or on a value not of their type, are
// errors at their line rather than read as plain text.
func TestUnsupportedTagsRejected(t *testing.T) {
	for _, src := range []string{
		"refusal:\n  title: !!binary SGVsbG8=\n",
		"refusal:\n  title: !custom Hello\n",
		"refusal:\n  title: !!map Hello\n",
		"refusal:\n  title: !!timestamp 2001-12-14\n",
		"refusal:\n  title: !!int Hello\n",
		"refusal:\n  title: !!null Hello\n",
		"refusal:\n  title: !!bool yes\n",
		"refusal:\n  title: !!float x\n",
		"refusal:\n  status: !!str 429\n",
		"refusal:\n  status: !custom 429\n",
		"refusal:\n  status: !!float 429\n",
		"reload:\n  interval: !custom 5s\n",
		"reload:\n  interval: !!binary NXM=\n",
		"reload: !!set\n  interval: 5s\n",
		"reload: !custom {interval: 5s}\n",
		"client_ip:\n  trusted_proxies: !!omap [10.0.0.0/8]\n",
		"reload:\n  !!binary aW50ZXJ2YWw=: 5s\n",
	} {
		c, err := Parse("f.yaml", []byte(src))
		if err == nil {
			t.Errorf("%q accepted: title=%q status=%d", src, c.Refusal.Title, c.Refusal.Status)
			continue
		}
		for _, p := range Problems(err) {
			if p.Pos.Line != 2 && !strings.HasPrefix(src, "reload: !") {
				t.Errorf("%q: problem not at line 2: %v", src, p)
			}
		}
	}
	c, err := Parse("f.yaml", []byte("refusal:\n  title: !!str Hello\n  detail: !!int 42\n  status: !!int 429\n"+
		"reload: !!map\n  watch: !!bool true\n  interval: !!str 5s\nshutdown_timeout: !!null\n"+
		"client_ip: {trusted_proxies: !!seq [10.0.0.0/8]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Refusal.Title != "Hello" || c.Refusal.Detail != "42" || c.Refusal.Status != 429 || c.Reload.Interval != 5*time.Second {
		t.Fatalf("core tags: %+v %+v", c.Refusal, c.Reload)
	}
}

// Durations that a tiny value makes pathological have a least value, each
// refused at its line.
func TestTinyDurationsRejected(t *testing.T) {
	src := `listen:
  read_timeout: 5ns
  write_timeout: 1us
  idle_timeout: 5ns
upstream:
  dial_timeout: 1ns
  response_timeout: 999us
store:
  redis: {url: "redis://127.0.0.1:6379"}
rules:
  - name: a
    consistency: eventual
    sync_interval: 1ns
    policies: [{rate: 10/s}]
  - name: b
    consistency: eventual
    sync_interval: 10ms
    policies: [{rate: 10/s}]
reload:
  watch: false
  interval: 1ns
`
	_, err := Parse("f.yaml", []byte(src))
	checkProblems(t, err, []want{
		{2, "listen.read_timeout 5ns is below the least value of 1ms"},
		{3, "listen.write_timeout 1µs is below the least value of 1ms"},
		{6, "upstream.dial_timeout 1ns"},
		{7, "upstream.response_timeout 999µs"},
		{13, "rules[0].sync_interval 1ns is below the least value of 10ms"},
		{21, "reload.interval 1ns is below the least value of 10ms"},
	})
	c, err := Parse("f.yaml", []byte("listen: {read_timeout: 1ms, write_timeout: 1ms}\nupstream: {dial_timeout: 1ms, response_timeout: 1ms}\nreload: {interval: 10ms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Reload.Interval != 10*time.Millisecond || c.Listen.ReadTimeout != time.Millisecond {
		t.Fatalf("least values: %+v %+v", c.Reload, c.Listen)
	}
}

// problemList is err's problems, one "line: message" a line.
func problemList(err error) string {
	var b strings.Builder
	for _, p := range Problems(err) {
		fmt.Fprintf(&b, "%d: %s\n", p.Pos.Line, p.Msg)
	}
	return b.String()
}

// A failed policy element does not hide a problem of its rule: policies
// and tiers both set.
func TestFailedElementKeepsRuleProblem(t *testing.T) {
	src := "rules:\n  - name: a\n    policies: [5]\n    tiers:\n      default: free\n      plans: {free: [{rate: 1/s}]}\n"
	_, err := Parse("f.yaml", []byte(src))
	if got := problemList(err); !strings.Contains(got, "set policies or tiers, not both") {
		t.Errorf("the rule's own problem is hidden:\n%s", got)
	}
}

// Names derived from a name that failed to decode raise no problems of
// their own: a policy's default name (its rule's), and a clash with it.
func TestFailedNameRaisesNoDerivedProblems(t *testing.T) {
	for _, tc := range []struct{ src, spurious string }{
		{"rules:\n  - name: [a]\n    policies: [{rate: 1/s}]\n", "policies[0].name"},
		{"rules:\n  - name: a\n    policies: [{rate: 1/s, name: [x]}, {rate: 2/s, name: a}]\n", "duplicate policy name"},
	} {
		_, err := Parse("f.yaml", []byte(tc.src))
		got := problemList(err)
		if got == "" || strings.Contains(got, tc.spurious) {
			t.Errorf("%q:\n%swant the decoding problem alone", tc.src, got)
		}
	}
}

// A legitimate reuse of a medium anchor fits the alias budget: 500 rules
// sharing one match of 100 path prefixes (51k values expanded).
func TestAliasBudgetFitsLegitimateReuse(t *testing.T) {
	var b strings.Builder
	b.WriteString("rules:\n  - name: r0\n    match: &m\n      path_prefixes:\n")
	for i := range 100 {
		fmt.Fprintf(&b, "        - /p%d\n", i)
	}
	b.WriteString("    policies: &p [{rate: 10/s}]\n")
	for i := 1; i < 500; i++ {
		fmt.Fprintf(&b, "  - {name: r%d, match: *m, policies: *p}\n", i)
	}
	if _, err := Parse("f.yaml", []byte(b.String())); err != nil {
		t.Errorf("%d-byte config refused: %v", b.Len(), err)
	}
}

// A failed name hides only the problems that follow from it, not an
// independent clash: two other rules named alike, or two policies named
// alike explicitly under a rule whose own name failed.
func TestFailedNameKeepsIndependentDuplicates(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"rules:\n  - name: [x]\n    policies: [{rate: 1/s}]\n" +
			"  - name: b\n    policies: [{rate: 1/s}]\n  - name: b\n    policies: [{rate: 1/s}]\n", `duplicate rule name "b"`},
		{"rules:\n  - name: [x]\n    policies: [{name: p, rate: 1/s}, {name: p, rate: 2/s}]\n", `duplicate policy name "p"`},
	} {
		_, err := Parse("f.yaml", []byte(tc.src))
		if got := problemList(err); !strings.Contains(got, tc.want) {
			t.Errorf("%q:\n%swant also %s", tc.src, got, tc.want)
		}
	}
}

// Every document after the first is looked at: empty ones are skipped,
// and the first with content is refused, however many empty ones come
// before it.
func TestThirdDocumentIsAnError(t *testing.T) {
	src := "listen: {addr: \":8080\"}\n---\n---\nrules:\n  - name: a\n    policies: [{rate: 1/s}]\n"
	_, err := Parse("f.yaml", []byte(src))
	checkProblems(t, err, []want{{3, "a second YAML document: the configuration is one document"}})
}
