package config

import (
	"regexp"
	"strings"
	"testing"
)

var lineNumber = regexp.MustCompile(`line \d`)

// A syntax error is reported once, at the line at fault: not at the line
// where the enclosing mapping began, not counted from 0, not without a
// line when it is on the first, and without the YAML library's own
// "line N:" repeated in the message. A tab in the indentation is named as
// such, at its column.
func TestSyntaxErrorsAtTheLineAtFault(t *testing.T) {
	cases := []struct {
		name, src string
		line, col int
		text      string
	}{
		{"tab", "listen:\n\taddr: x\n", 2, 1, "a tab in the indentation: YAML indents with spaces only"},
		{"tab on the first line", "\tlisten: {addr: x}\n", 1, 1, "a tab in the indentation"},
		{"tab after spaces", "rules:\n  - name: r\n  \t policies: []\n", 3, 3, "a tab in the indentation"},
		{"dedented key", "rules:\n  - name: r\n    policies:\n      - rate: 1/s\n     burst: 3\n", 5, 1,
			"did not find expected key (check this line's indentation"},
		{"dedented list item", "rules:\n  - name: r\n    policies:\n    - rate: 1/s\n      burst: 2\n   - rate: 2/s\n", 6, 1,
			"did not find expected '-' indicator"},
		{"indented key", "listen:\n  addr: ':1'\n  read_timeout: 5s\n  idle_timeout: 5s\nadmin:\n  addr: ':2'\n    x: 1\n", 7, 1,
			"did not find expected key"},
		{"first line", "a: b: c\n", 1, 1, "mapping values are not allowed in this context"},
		{"control character", "listen:\n  addr: \":80\x00\"\n", 2, 13, "control characters are not allowed"},
		{"bad UTF-8", "# ok: \u00e9\nrules: []\nrefusal: {body: \"\xff\"}\n", 3, 18, "invalid leading UTF-8 octet"},
		{"unknown anchor", "listen:\n  addr: ':1'\nroutes:\n  - {path: /, upstream: *u}\n", 4, 25, "unknown anchor 'u' referenced"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(c.src))
			ps := Problems(err)
			if len(ps) != 1 {
				t.Fatalf("want one problem, got %v", err)
			}
			p := ps[0]
			if p.Pos.Line != c.line || p.Pos.Col != c.col || !strings.HasPrefix(p.Msg, c.text) {
				t.Errorf("got %v, want c.yaml:%d:%d: %s", p, c.line, c.col, c.text)
			}
			if lineNumber.MatchString(p.Msg) {
				t.Errorf("the message repeats a line: %v", p)
			}
		})
	}
}
