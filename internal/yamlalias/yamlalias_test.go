package yamlalias

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func parse(t *testing.T, src string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	return &doc
}

// laughs is a billion laughs of depth levels, each anchor a list of ten
// aliases of the one before: 10^levels nodes expanded.
func laughs(levels int) string {
	var b strings.Builder
	b.WriteString("l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= levels; i++ {
		p := "*l" + string(rune('0'+i-1))
		b.WriteString("l" + string(rune('0'+i)) + ": &l" + string(rune('0'+i)) + " [" + strings.Repeat(p+", ", 9) + p + "]\n")
	}
	return b.String()
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		line      int // of the fault; 0 for none
		msg       string
	}{
		{"no aliases", "a: [1, 2, 3]\nb: {c: d}\n", 0, ""},
		{"ordinary reuse", "a: &a {x: 1, y: [1, 2]}\nb: *a\nc: *a\nd: [*a, *a]\n", 0, ""},
		{"a billion laughs", laughs(9), 4, "aliases expand past"}, // the document passes its budget (12,440) at l3
		{"recursive", "a: &a [x, *a]\n", 1, "refers to a node it is part of"},
		{"recursive through a mapping", "a: &a\n  b: [*a, *a]\n", 2, "refers to a node it is part of"},
	} {
		at, msg := Check(parse(t, tc.src))
		switch {
		case tc.line == 0 && at != nil:
			t.Errorf("%s: refused at %d: %s", tc.name, at.Line, msg)
		case tc.line != 0 && (at == nil || at.Kind != yaml.AliasNode || at.Line != tc.line || !strings.Contains(msg, tc.msg)):
			t.Errorf("%s: %v %q, want an alias at line %d and %q", tc.name, at, msg, tc.line, tc.msg)
		}
	}
}

// A bomb is measured in time linear in its size, not in its expansion.
func TestCheckIsLinear(t *testing.T) {
	root := parse(t, laughs(9)) // 10^9 nodes expanded
	start := time.Now()
	for range 100 {
		Check(root)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("100 checks of a 1 KB bomb took %v", d)
	}
}
