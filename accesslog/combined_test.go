package accesslog

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestAppendCombined(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("", -7*3600))
	e := &Entry{
		Time: at, Remote: []byte("192.0.2.7"), Method: []byte("GET"), URI: []byte("/a?q=\"x\""),
		Proto: []byte("HTTP/1.1"), UserAgent: []byte("curl \\ é\n"), Status: 429, Bytes: 17,
		Rule: "per-ip", Decision: "refused",
	}
	want := `192.0.2.7 - - [04/Mar/2026:05:06:07 -0700] "GET /a?q=\x22x\x22 HTTP/1.1" 429 17 "-" "curl \x5C \xC3\xA9\x0A" rule=per-ip decision=refused` + "\n"
	if got := string(AppendCombined(nil, e)); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if got := string(AppendCombined(nil, &Entry{Time: at})); got != `- - - [04/Mar/2026:05:06:07 -0700] " - " 0 0 "-" "-" rule=- decision=-`+"\n" {
		t.Fatalf("empty entry: %s", got)
	}
	buf := make([]byte, 0, 512)
	if n := testing.AllocsPerRun(100, func() { buf = AppendCombined(buf[:0], e) }); n != 0 {
		t.Errorf("AppendCombined allocates %v times", n)
	}
}

// Unquote reverses AppendQuoted, and reads Apache's \" and \\ too.
func TestUnquoteReversesAppendQuoted(t *testing.T) {
	for _, v := range []string{"", "plain", `a "b" \c`, "\x00\x1f\x7f\xff", "é/ü", `\x41`} {
		q := AppendQuoted(nil, v)
		if bytes.ContainsAny(q, "\"\n") {
			t.Errorf("AppendQuoted(%q) = %q: a quote or newline left", v, q)
		}
		if got := string(Unquote(nil, q)); got != v {
			t.Errorf("Unquote(AppendQuoted(%q)) = %q", v, got)
		}
	}
	if got := string(Unquote(nil, []byte(`a \"b\" \\ \q \x4`))); got != `a "b" \ \q \x4` {
		t.Errorf("Apache escapes: %q", got)
	}
}

func FuzzQuotedRoundTrip(f *testing.F) {
	f.Add([]byte(`GET /a?q="x" \ é`))
	f.Add([]byte("\x00\xff\\x41"))
	f.Fuzz(func(t *testing.T, v []byte) {
		q := AppendQuoted(nil, v)
		if strings.ContainsAny(string(q), "\"\n\r") {
			t.Fatalf("AppendQuoted(%q) = %q: a quote or line break left", v, q)
		}
		if got := Unquote(nil, q); !bytes.Equal(got, v) {
			t.Fatalf("Unquote(AppendQuoted(%q)) = %q", v, got)
		}
	})
}
