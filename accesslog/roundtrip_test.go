package accesslog

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// readBack writes e in the format the gateway names ("json" or
// "combined"), detects the line's format as tollgate replay does (no
// flag) and parses it. It fails the test if the line is detected as
// another format or does not parse.
func readBack(t testing.TB, format string, e *Entry) Record {
	t.Helper()
	var line []byte
	want := FormatJSON
	if format == "combined" {
		line, want = AppendCombined(nil, e), FormatCombined
	} else {
		line = AppendJSON(nil, e)
	}
	if got := DetectFormat(line); got != want {
		t.Fatalf("%s line %q detected as %v", format, line, got)
	}
	var r Record
	r.Reset(0)
	if err := NewParser(want, Fields{}).Parse(line[:len(line)-1], &r); err != nil {
		t.Fatalf("%s line %q: %v", format, line, err)
	}
	return r
}

// checkReadBack reads e back in both formats and compares what the
// reader gives with what the writer was given: the client address, the
// method, the target's path and query, the status and the time (the
// combined format's to the second, in its zone), and the host from JSON.
// JSON strings hold UTF-8: each byte of invalid UTF-8 is read back as
// U+FFFD.
func checkReadBack(t testing.TB, e *Entry) {
	t.Helper()
	target := string(e.URI)
	path, query := target, ""
	if i := strings.IndexAny(target, "?#"); i >= 0 {
		path = target[:i]
		if target[i] == '?' {
			query, _, _ = strings.Cut(target[i+1:], "#")
		}
	}
	for _, format := range []string{"combined", "json"} {
		r := readBack(t, format, e)
		at, text := e.Time, func(s string) string { return s }
		if format == "combined" {
			at = at.Truncate(time.Second)
		} else {
			text = validUTF8
		}
		got := fmt.Sprintf("%s %s %s ? %s %s %d", r.Addr, r.Method, r.Path, r.Query, r.Status, r.Time)
		want := fmt.Sprintf("%s %s %s ? %s %d %d", e.Remote, text(string(e.Method)), text(path), text(query), e.Status, at.UnixNano())
		if got != want {
			t.Errorf("%s: read back %q, written %q", format, got, want)
		}
		if format == "json" && string(r.Host) != validUTF8(string(e.Host)) {
			t.Errorf("json: host read back %q, written %q", r.Host, e.Host)
		}
	}
}

// validUTF8 is s with each byte of invalid UTF-8 replaced by U+FFFD.
func validUTF8(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// What the gateway writes (AppendCombined, AppendJSON) is what replay
// reads (DetectFormat, NewParser): quotes, backslashes, escapes, non-ASCII
// and control bytes in the fields included.
func TestWrittenLinesReadBack(t *testing.T) {
	at := time.Date(2026, 11, 30, 1, 2, 3, 456789000, time.FixedZone("", 5*3600+1800))
	for _, e := range []*Entry{
		{Time: at, Remote: []byte("192.0.2.7"), Method: []byte("GET"), URI: []byte("/v1/items?page=2"), Proto: []byte("HTTP/1.1"),
			Host: []byte("api.example.com"), Status: 200, Bytes: 512, Duration: time.Millisecond},
		{Time: at, Remote: []byte("2001:db8::1"), Method: []byte("POST"), URI: []byte(`/a"b\c?q=%22x%22&é=1#frag`), Proto: []byte("HTTP/1.0"),
			Host: []byte("[2001:db8::2]:8080"), UserAgent: []byte("odd \"agent\" \\ é\n\x00"), Referer: []byte(`http://x/"y"`),
			Status: 429, Rule: "per-ip", Decision: "refused"},
		{Time: at.UTC(), Remote: []byte("203.0.113.9"), Method: []byte("DELETE"), URI: []byte("/\x7f\x01\xff</script>\u2028"),
			Status: 503},
	} {
		checkReadBack(t, e)
	}
}

// FuzzWrittenLinesReadBack writes fuzzed fields, as a client can send
// them, and reads them back: a method is a token and a target has no
// space or control byte (the gateway's HTTP parser refuses others).
func FuzzWrittenLinesReadBack(f *testing.F) {
	f.Add("GET", "/v1/items?page=2", "api.example.com", "curl/8", int64(1764464523456789000), uint16(200))
	f.Add("POST", `/a"b\c?q=\x22#f`, "[::1]:80", "\"\\\n", int64(0), uint16(429))
	f.Fuzz(func(t *testing.T, method, uri, host, agent string, ns int64, status uint16) {
		if method == "" || strings.ContainsFunc(method, func(r rune) bool { return r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) }) ||
			!strings.HasPrefix(uri, "/") || strings.ContainsFunc(uri, func(r rune) bool { return r <= ' ' || r == 0x7f }) ||
			!utf8.ValidString(method) {
			return
		}
		at := time.Unix(0, ns).UTC()
		if at.Year() < 1678 || at.Year() > 2261 {
			return
		}
		e := &Entry{Time: at, Remote: []byte("192.0.2.7"), Method: []byte(method), URI: []byte(uri), Proto: []byte("HTTP/1.1"),
			Host: []byte(host), UserAgent: []byte(agent), Status: int(status)}
		checkReadBack(t, e)
	})
}

// DetectFormat tells the gateway's two formats and CSV apart.
func TestDetectFormat(t *testing.T) {
	e := &Entry{Time: time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC), Remote: []byte("192.0.2.7"), Method: []byte("GET"),
		URI: []byte("/"), Proto: []byte("HTTP/1.1"), Status: 200}
	for in, want := range map[string]Format{
		"\n" + string(AppendJSON(nil, e)):                                        FormatJSON,
		string(AppendCombined(nil, e)):                                           FormatCombined,
		`1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1` + "\n": FormatCombined,
		"timestamp,key\n1431857103,a\n":                                          FormatCSV,
	} {
		if got := DetectFormat([]byte(in)); got != want {
			t.Errorf("%q: %v, want %v", in[:20], got, want)
		}
	}
}

// benchLines returns n lines of the format, from 5,000 clients, with
// paths of an API: the combined and JSON lines as the gateway writes
// them, CSV lines following a header naming their columns.
func benchLines(format Format, n int) [][]byte {
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	out := make([][]byte, n)
	for i := range out {
		t := start.Add(time.Duration(i) * time.Millisecond)
		ip := fmt.Sprintf("10.1.%d.%d", (i%5000)/256, (i%5000)%256)
		e := &Entry{Time: t, Remote: []byte(ip), Method: []byte("GET"), Host: []byte("api.example.com"),
			URI: []byte("/v1/items/" + strconv.Itoa(i%7) + "?page=2"), Proto: []byte("HTTP/1.1"),
			UserAgent: []byte("bench/1.0 (x; y)"), Status: 200, Bytes: 512, Duration: 1250 * time.Microsecond, Decision: "allowed"}
		switch format {
		case FormatJSON:
			out[i] = AppendJSON(nil, e)
		case FormatCSV:
			out[i] = fmt.Appendf(nil, `%s,%s,GET,/v1/items/%d,200,"bench/1.0 (x, y)"`+"\n", t.Format(time.RFC3339Nano), ip, i%7)
		default:
			out[i] = AppendCombined(nil, e)
		}
		out[i] = out[i][:len(out[i])-1] // as read: without the newline
	}
	return out
}

// BenchmarkParse measures each format's line parser alone.
func BenchmarkParse(b *testing.B) {
	for _, f := range []Format{FormatCombined, FormatJSON, FormatCSV} {
		b.Run(f.String(), func(b *testing.B) {
			lines := benchLines(f, 4096)
			p := NewParser(f, Fields{})
			var r Record
			if f == FormatCSV {
				r.Reset(0)
				if err := p.Parse([]byte("time,ip,method,path,status,agent"), &r); err != ErrHeader {
					b.Fatal(err)
				}
			}
			size := 0
			for _, l := range lines {
				size += len(l)
			}
			b.SetBytes(int64(size / len(lines)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r.Reset(0)
				if err := p.Parse(lines[i%len(lines)], &r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
