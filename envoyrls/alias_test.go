package envoyrls

import (
	"strings"
	"testing"
)

// A file whose aliases expand without bound (an alias inside its own
// anchor, or anchors of aliases of anchors) is refused with one problem
// at an alias's line, before its descriptors are walked: walking them
// took seconds and reported a problem for every node past the depth
// limit.
func TestAliasBombIsOneProblem(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		line      int
		msg       string
	}{
		{"recursive", "domain: d\ndescriptors: &l\n  - key: k\n    descriptors: *l\n  - key: j\n    descriptors: *l\n", 4, "refers to a node it is part of"},
		{"laughs", "domain: d\nmetadata: &a [x, x, x, x, x, x, x, x, x, x]\n" +
			"descriptors:\n  - &b {key: b, metadata: [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]}\n" +
			"  - &c {key: c, metadata: [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]}\n" +
			"  - &e {key: e, metadata: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]}\n" +
			"  - &f {key: f, metadata: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]}\n", 6, "aliases expand past"},
	} {
		_, err := Build([]Source{{Name: "f.yaml", Data: []byte(tc.src)}})
		ps := Problems(err)
		if len(ps) != 1 || ps[0].Line != tc.line || !strings.Contains(ps[0].Msg, tc.msg) {
			t.Errorf("%s: %d problems, want one at line %d saying %q:\n%v", tc.name, len(ps), tc.line, tc.msg, err)
		}
	}
}
