package accesslog

import (
	"math"
	"testing"
	"time"
)

func TestParseTimes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // RFC 3339
		ok   bool
	}{
		{"17/May/2015:10:05:03 +0000", "2015-05-17T10:05:03Z", true},
		{"17/May/2015:10:05:03 +0530", "2015-05-17T04:35:03Z", true},
		{"17/May/2015:10:05:03 -0700", "2015-05-17T17:05:03Z", true},
		{"[01/Jan/2000:00:00:00 +0100]", "1999-12-31T23:00:00Z", true},
		{"29/Feb/2024:23:59:59 +0000", "2024-02-29T23:59:59Z", true},
		{"2015-05-17T10:05:03Z", "2015-05-17T10:05:03Z", true},
		{"2015-05-17T10:05:03.250+02:00", "2015-05-17T08:05:03.25Z", true},
		{"2015-05-17 10:05:03.123456789-0700", "2015-05-17T17:05:03.123456789Z", true},
		{"2015-05-17T10:05:03", "2015-05-17T10:05:03Z", true},
		{"1431857103", "2015-05-17T10:05:03Z", true},
		{"1431857103.5", "2015-05-17T10:05:03.5Z", true},
		{"1431857103500", "2015-05-17T10:05:03.5Z", true},
		{"1431857103500000", "2015-05-17T10:05:03.5Z", true},
		{"1431857103500000000", "2015-05-17T10:05:03.5Z", true},
		{"17/Mai/2015:10:05:03 +0000", "", false},
		{"2015-13-17T10:05:03Z", "", false},
		{"2015-05-17T10:05:03+25:00", "", false},
		{"yesterday", "", false},
		{"", "", false},
	} {
		got, ok := ParseTime([]byte(tc.in))
		if ok != tc.ok {
			t.Errorf("%q: ok %v, want %v", tc.in, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		want, err := time.Parse(time.RFC3339Nano, tc.want)
		if err != nil {
			t.Fatal(err)
		}
		if got != want.UnixNano() {
			t.Errorf("%q: %v, want %v", tc.in, time.Unix(0, got).UTC(), want)
		}
	}
}

func TestParseCLF(t *testing.T) {
	var r Record
	r.Reset(0)
	line := `2001:db8::1 - alice [17/May/2015:10:05:03 +0000] "POST /api/v1/items?id=3&x=y HTTP/1.1" 429 12 "-" "curl/8"`
	if err := new(clfParser).Parse([]byte(line), &r); err != nil {
		t.Fatal(err)
	}
	if string(r.Addr) != "2001:db8::1" || string(r.User) != "alice" || string(r.Method) != "POST" ||
		string(r.Path) != "/api/v1/items" || string(r.Query) != "id=3&x=y" || string(r.Status) != "429" {
		t.Errorf("parsed %+v", r)
	}
	// Common format (no referer or agent) and an escaped quote in the request.
	r.Reset(0)
	line = `10.0.0.1 - - [17/May/2015:10:05:03 +0000] "GET /a\"b HTTP/1.0" 200 -`
	if err := new(clfParser).Parse([]byte(line), &r); err != nil || string(r.Status) != "200" || string(r.Path) != `/a"b` {
		t.Errorf("common: %v %+v", err, r)
	}
	// The gateway's own combined log appends rule= and decision=.
	r.Reset(0)
	line = `192.0.2.9 - - [30/Nov/2026:02:00:00 +0100] "GET /v1/x HTTP/1.1" 429 57 "-" "curl/8" rule=per-ip decision=refused`
	if err := new(clfParser).Parse([]byte(line), &r); err != nil || string(r.Status) != "429" || r.Time != time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC).UnixNano() {
		t.Errorf("gateway combined: %v %+v", err, r)
	}
	for _, bad := range []string{
		`10.0.0.1 - - 17/May/2015:10:05:03 +0000 "GET / HTTP/1.1" 200 1`,
		`10.0.0.1 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1`,
		`10.0.0.1 - - [not a time] "GET / HTTP/1.1" 200 1`,
		`10.0.0.1 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1"`,
	} {
		r.Reset(0)
		if err := new(clfParser).Parse([]byte(bad), &r); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// The request's escapes are decoded as Apache (\" \\ \xHH) and nginx
// (\xHH) write them, so that paths and filters see the request's bytes.
func TestCLFRequestEscapesAreDecoded(t *testing.T) {
	for line, want := range map[string]string{
		`192.0.2.1 - - [17/May/2015:10:05:03 +0000] "GET /api/\x22q\x22 HTTP/1.1" 200 5`:   `/api/"q"`,
		`192.0.2.1 - - [17/May/2015:10:05:03 +0000] "GET /api/a\\b\"c HTTP/1.1" 200 5`:     `/api/a\b"c`,
		`192.0.2.1 - - [17/May/2015:10:05:03 +0000] "GET /api/caf\xc3\xa9 HTTP/1.1" 200 5`: "/api/café",
		`192.0.2.1 - - [17/May/2015:10:05:03 +0000] "GET /api/\q\xZZ\ HTTP/1.1" 200 5`:     `/api/\q\xZZ\`,
	} {
		var r Record
		r.Reset(0)
		if err := new(clfParser).Parse([]byte(line), &r); err != nil || string(r.Path) != want || string(r.Method) != "GET" {
			t.Errorf("%s: %v, path %q; want %q", line, err, r.Path, want)
		}
	}
}

// A line that is not one valid JSON object is malformed, not half read.
func TestJSONLinesMustBeValidJSON(t *testing.T) {
	for _, bad := range []string{
		`{"time":"2026-11-30T00:00:00Z","remote_addr":"192.0.2.1"`,
		`{"time":"2026-11-30T00:00:00Z","remote_addr":"192.0.2.1"} trailing`,
		`{"time":"2026-11-30T00:00:00Z" "remote_addr":"192.0.2.1"}`,
		`{"time":"2026-11-30T00:00:00Z","remote_addr":"192.0.2.1}`,
		`{"time":"2026-11-30T00:00:00Z",}`,
		`["time","2026-11-30T00:00:00Z"]`,
	} {
		var r Record
		r.Reset(0)
		if err := newJSONParser(Fields{}).Parse([]byte(bad), &r); err != ErrSyntax {
			t.Errorf("%s: %v; want %v", bad, err, ErrSyntax)
		}
	}
}

// The minute cache gives the same instants as a full parse, whatever the
// sequence of minutes, seconds and zones.
func TestTimeCacheMatchesFullParse(t *testing.T) {
	var c timeCache
	for _, s := range []string{
		"17/May/2015:10:05:03 +0000", "17/May/2015:10:05:59 +0000", "17/May/2015:10:05:00 +0000",
		"17/May/2015:10:05:03 +0200", "17/May/2015:10:05:04 +0200", "17/May/2015:10:06:04 +0200",
		"17/May/2015:10:06:04", "17/May/2015:10:06:05", "17/May/2015:10:06:05 -0130",
		"17/May/2015:10:06:99 -0130", "17/May/2015:10:06:05 -0130", "18/May/2015:10:06:05 -0130",
	} {
		want, wok := parseCLFTime([]byte(s))
		got, ok := c.clf([]byte(s))
		if got != want || ok != wok {
			t.Errorf("%q: cache %d %v, full parse %d %v", s, got, ok, want, wok)
		}
	}
}

// Every format's parser allocates nothing per line, decoding escapes and
// doubled quotes included.
func TestLineParsersDoNotAllocate(t *testing.T) {
	for _, c := range []struct {
		f    Format
		line string
	}{
		{FormatJSON, `{"time":"2026-11-30T00:00:00.5Z","remote_addr":"192.0.2.7","method":"GET","uri":"\/api\/x?\u0070=1","status":200,"meta":{"a":[1,2]},"cost":2}`},
		{FormatCSV, `2026-11-30T00:00:00.5Z,192.0.2.7,"GET","/a,""b""",200`},
		{FormatCombined, `192.0.2.7 - - [17/May/2015:10:05:03 +0000] "GET /api/\x22q\x22\\ HTTP/1.1" 200 5`},
	} {
		p := NewParser(c.f, Fields{})
		var r Record
		if c.f == FormatCSV {
			r.Reset(0)
			if err := p.Parse([]byte("time,ip,method,path,status"), &r); err != ErrHeader {
				t.Fatal(err)
			}
		}
		line := []byte(c.line)
		var err error
		parse := func() { r.Reset(0); err = p.Parse(line, &r) }
		parse()
		if a := testing.AllocsPerRun(1000, parse); a != 0 || err != nil {
			t.Errorf("%v: %v allocations per line (%v)", c.f, a, err)
		}
	}
}

func TestTimestampsAtInt64Edges(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"2262-04-11T23:47:16.854775807Z", math.MaxInt64},
		{"1677-09-21T00:12:43.145224192Z", math.MinInt64},
		{"9223372036.854775807", math.MaxInt64},
		{"9223372036854775807", math.MaxInt64},
		{"[11/Apr/2262:23:47:16 +0000]", math.MaxInt64 / nsSecond * nsSecond},
		{"1678-01-01T00:00:00Z", time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()},
	} {
		if got, ok := ParseTime([]byte(tc.in)); !ok || got != tc.want {
			t.Errorf("%s: got %d, %v; want %d", tc.in, got, ok, tc.want)
		}
	}
	if _, ok := ParseTime([]byte("9223372036854775808")); ok {
		t.Error("2^63 ns parsed")
	}
}

// The common log format's cache reuses a minute's start for its seconds:
// near the ends of the range some seconds of a minute are out of it.
func TestCLFCacheAtInt64Edges(t *testing.T) {
	var c timeCache
	if _, ok := c.clf([]byte("11/Apr/2262:23:47:10 +0000")); !ok {
		t.Fatal("23:47:10 rejected")
	}
	if v, ok := c.clf([]byte("11/Apr/2262:23:47:50 +0000")); ok {
		t.Errorf("11/Apr/2262:23:47:50 parsed as %d, past the int64 range", v)
	}
	c = timeCache{}
	if _, ok := c.clf([]byte("21/Sep/1677:00:12:44 +0000")); !ok {
		t.Fatal("1677-09-21 00:12:44 rejected")
	}
	if v, ok := c.clf([]byte("21/Sep/1677:00:12:43 +0000")); ok {
		t.Errorf("21/Sep/1677:00:12:43 parsed as %d, before the int64 range", v)
	}
}
