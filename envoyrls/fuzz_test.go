package envoyrls

import (
	"strings"
	"testing"
)

// FuzzBuild feeds arbitrary files to the loader: it returns a
// configuration or problems, never panics, and every problem names the
// file.
func FuzzBuild(f *testing.F) {
	f.Add([]byte(e2eConfig))
	f.Add([]byte("domain: a\ndescriptors:\n  - key: k\n    value: v*w*\n    share_threshold: true\n    rate_limit: {unit: day, requests_per_unit: 4294967295, tollgate_algorithm: token_bucket}\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("domain: d\ndescriptors: &l\n  - key: k\n    descriptors: *l\n"))
	f.Add([]byte("'''"))
	f.Add([]byte("0.25: x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Build([]Source{{Name: "f.yaml", Data: data}})
		if err == nil {
			if l.Domains() != 1 {
				t.Fatalf("%d domains from one file", l.Domains())
			}
			return
		}
		ps := Problems(err)
		if len(ps) == 0 {
			t.Fatalf("error without problems: %v", err)
		}
		for _, p := range ps {
			if p.File != "f.yaml" || !strings.HasPrefix(p.Error(), "f.yaml") {
				t.Fatalf("problem %v does not name the file", p)
			}
		}
	})
}

// FuzzMatch matches arbitrary descriptors against a configuration with
// wildcards: it never panics, and a value matching a trailing wildcard
// finds its limit.
func FuzzMatch(f *testing.F) {
	l := mustBuild(f, Source{Name: "w.yaml", Data: []byte(`
domain: d
descriptors:
  - key: a
    value: x*
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: a
    value: y*z*
    share_threshold: true
    rate_limit: {unit: second, requests_per_unit: 2}
  - key: a
    descriptors:
      - key: b
        value: "*"
        rate_limit: {unit: second, requests_per_unit: 3}
`)})
	f.Add("a", "x", "b", "")
	f.Add("a", "yqz", "", "")
	f.Add("a", "q", "b", "anything")
	f.Add("a_x", "", "", "")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		e := entries(k1, v1)
		if k2 != "" {
			e = append(e, entries(k2, v2)...)
		}
		m := l.Match("d", e)
		if m.Limit != nil {
			_ = counterKey("d", e, m.Shared, m.Limit)
		}
		if k1 == "a" && k2 == "" && strings.HasPrefix(v1, "x") && (m.Limit == nil || m.Limit.Path != "a_x*") {
			t.Fatalf("a=%q: limit %v, want a_x*", v1, m.Limit)
		}
	})
}
