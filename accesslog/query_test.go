package accesslog

import (
	"testing"
)

func TestQueryAppendURI(t *testing.T) {
	const uri = "/a/b?token=s3cr3t&page=2&API_KEY=k1&%74oken=t2&sig&x=1=2&&api+key=v&Token="
	for _, c := range []struct {
		mode  string
		names []string
		in    string
		want  string
	}{
		{"keep", nil, uri, uri},
		{"", nil, uri, uri},
		{"drop", nil, uri, "/a/b"},
		{"drop", nil, "/a/b", "/a/b"},
		{"drop", nil, "/a?", "/a"},
		{"redact", []string{"token", "api_key", "api key"}, uri,
			"/a/b?token=REDACTED&page=2&API_KEY=REDACTED&%74oken=REDACTED&sig&x=1=2&&api+key=REDACTED&Token=REDACTED"},
		{"redact", nil, uri,
			"/a/b?token=REDACTED&page=REDACTED&API_KEY=REDACTED&%74oken=REDACTED&sig&x=REDACTED&&api+key=REDACTED&Token=REDACTED"},
		{"redact", []string{"token"}, "/a?", "/a?"},
		{"redact", []string{"token"}, "/a", "/a"},
		{"redact", []string{"token"}, "/a?tokenx=1&xtoken=2", "/a?tokenx=1&xtoken=2"},
	} {
		q, err := NewQuery(c.mode, c.names)
		if err != nil {
			t.Fatalf("%s %v: %v", c.mode, c.names, err)
		}
		if got := string(q.AppendURI([]byte("> "), []byte(c.in))); got != "> "+c.want {
			t.Errorf("%s %v %q:\n got %q\nwant %q", c.mode, c.names, c.in, got, "> "+c.want)
		}
	}
}

func TestNewQueryRefuses(t *testing.T) {
	for _, c := range []struct {
		mode  string
		names []string
	}{
		{"hide", nil}, {"keep", []string{"token"}}, {"drop", []string{"token"}},
		{"redact", []string{""}}, {"redact", []string{string(make([]byte, MaxRedactName+1))}},
	} {
		if _, err := NewQuery(c.mode, c.names); err == nil {
			t.Errorf("%q %q accepted", c.mode, c.names)
		}
	}
}

// No mode allocates: the access log writes every request's line.
func TestQueryAllocatesNothing(t *testing.T) {
	uri := []byte("/a/b?token=s3cr3t&page=2&%74oken=t2&" + string(make([]byte, 200)) + "=x")
	dst := make([]byte, 0, 1024)
	for _, mode := range []string{"keep", "drop", "redact"} {
		var names []string
		if mode == "redact" {
			names = []string{"token", "api_key"}
		}
		q, _ := NewQuery(mode, names)
		if n := testing.AllocsPerRun(100, func() { dst = q.AppendURI(dst[:0], uri) }); n != 0 {
			t.Errorf("%s: %v allocations", mode, n)
		}
	}
}

func BenchmarkQueryAppendURI(b *testing.B) {
	uri := []byte("/api/v1/items/42?token=s3cr3t&page=2&sort=name")
	dst := make([]byte, 0, 512)
	for _, mode := range []string{"keep", "drop", "redact"} {
		var names []string
		if mode == "redact" {
			names = []string{"token", "api_key", "access_token"}
		}
		q, _ := NewQuery(mode, names)
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				dst = q.AppendURI(dst[:0], uri)
			}
		})
	}
}
