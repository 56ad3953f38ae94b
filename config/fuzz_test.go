package config

import (
	"strings"
	"testing"
)

// FuzzParse: no file panics the loader; every problem names the file and,
// unless it is about the file as a whole, a line; a file that loads can
// be shown masked.
func FuzzParse(f *testing.F) {
	f.Add(defaultYAML)
	f.Add([]byte(`store: {redis: {url: "redis://127.0.0.1:6379/0%"}}` + "\n"))
	f.Add([]byte("routes:\n  - {path: /, upstream: 127.0.0.1:3000}\n"))
	f.Add([]byte("rules:\n  - name: r\n    policies:\n      - algorithm: token_bukket\n        limit: 99999999999999999999\n        burst: 1.5\n"))
	f.Add([]byte("listen:\n\taddr: x\n"))
	f.Add([]byte("a: &a [*a, *a]\nb: *c\n---\nc: 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const name = "fuzz.yaml"
		c, err := Parse(name, data)
		if err != nil {
			for _, p := range Problems(err) {
				whole := strings.HasPrefix(p.Msg, "the file is empty") || strings.HasPrefix(p.Msg, "the file holds no YAML document")
				if p.Pos.File != name || p.Pos.Line < 1 && !whole {
					t.Fatalf("problem without a position: %q at %+v", p.Msg, p.Pos)
				}
			}
			return
		}
		if _, err := c.Masked(); err != nil {
			t.Fatalf("Masked: %v", err)
		}
		for _, w := range c.Warnings() {
			if w.Pos.File != name {
				t.Fatalf("warning without the file: %v", w)
			}
		}
	})
}
