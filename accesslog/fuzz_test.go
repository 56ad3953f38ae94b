package accesslog

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Fuzz targets for every line parser, which read untrusted input (tollgate
// replay's logs). Each checks that nothing panics and, where a standard
// decoder exists, that the parser agrees with it. Seeds: f.Add below and
// testdata/fuzz/FuzzXxx. replay's FuzzRun runs the same inputs through a
// whole replay, every line accounted for.

func FuzzCLF(f *testing.F) {
	f.Add([]byte(`83.149.9.216 - - [17/May/2015:10:05:03 +0000] "GET /presentations/logstash-monitorama-2013/images/kibana-search.png HTTP/1.1" 200 203023 "http://semicomplete.com/presentations/logstash-monitorama-2013/" "Mozilla/5.0"`))
	f.Add([]byte(`2001:db8::1 - alice [17/May/2015:10:05:03 +0530] "POST /api/v1/items?id=3&x=y HTTP/1.1" 429 12`))
	f.Add([]byte(`10.0.0.1 - - [17/May/2015:10:05:03 +0000] "GET /a\"b HTTP/1.0" 200 -` + "\n" + `10.0.0.1 - - [17/May/2015:10:05:02 +0000] "-" 400 0`))
	f.Add([]byte(`192.0.2.9 - - [30/Nov/2026:02:00:00 +0100] "GET /v1/x HTTP/1.1" 429 57 "-" "curl/8" rule=per-ip decision=refused`))
	f.Add([]byte(`10.0.0.1 - - [31/Dec/9999:23:59:59 +0000] "GET / HTTP/1.1" 200 1`))
	f.Add([]byte("\x1f\x8b\x08\x00garbage"))
	f.Fuzz(func(t *testing.T, log []byte) {
		for _, line := range bytes.Split(log, []byte("\n")) {
			// A warm time cache gives what a cold parse gives.
			var warm clfParser
			var a, b Record
			a.Reset(0)
			b.Reset(0)
			errA := warm.Parse(line, &a)
			errB := warm.Parse(line, &b)
			var cold clfParser
			var c Record
			c.Reset(0)
			errC := cold.Parse(line, &c)
			if errA != errC || errB != errC || a.Time != c.Time || b.Time != c.Time {
				t.Fatalf("%q: %v %v %v, times %d %d %d", line, errA, errB, errC, a.Time, b.Time, c.Time)
			}
			if errC == nil && len(c.Status) == 0 {
				t.Fatalf("%q parsed without a status", line)
			}
		}
	})
}

// distinctKeys reports whether line is one JSON object whose top-level
// names are all distinct (encoding/json keeps the last of equal names,
// the JSON parser the first).
func distinctKeys(line []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		name := tok.(string)
		if seen[name] {
			return false
		}
		seen[name] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false
		}
	}
	return true
}

func FuzzJSONLines(f *testing.F) {
	f.Add([]byte(`{"time":"2026-11-30T01:00:00.5Z","remote_addr":"192.0.2.7","method":"GET","host":"api.example.com","uri":"/v1/items?page=2","status":200,"bytes":512,"duration_ms":1.250,"user_agent":"curl/8","rule":"","decision":"allowed"}`))
	f.Add([]byte(`{"time":"2026-11-30T00:00:00Z","remote_addr":"192.0.2.1","path":"\/api\/x"}`))
	f.Add([]byte(`{"t\u0069me":1431857103.25,"ip":"192.0.2.1","path":"/api/\"q\" \u00e9\ud83d\ude00","cost":3}`))
	f.Add([]byte(`{"meta":{"time":"x","a":[1,{"b":"}"}]},"ts":1431857103,"tenant":"acme","w":3}`))
	f.Add([]byte(`{"time":"2026-11-30T00:00:00Z","path":"\ud800","method":null,"status":true}` + "\n" + `{"time":`))
	f.Fuzz(func(t *testing.T, log []byte) {
		// One name per part, so that encoding/json's map says which
		// value each part must hold.
		p := newJSONParser(Fields{Addr: []string{"remote_addr"}, Method: []string{"method"}, Host: []string{"host"}})
		for _, line := range bytes.Split(log, []byte("\n")) {
			var r Record
			r.Reset(0)
			err := p.Parse(line, &r)
			var obj map[string]any
			if json.Unmarshal(line, &obj) != nil || obj == nil || !distinctKeys(line) || !utf8.Valid(line) {
				continue
			}
			// encoding/json reads it: so must we, to the same strings.
			if err == ErrSyntax {
				t.Fatalf("%s: encoding/json reads it, fastjson does not", line)
			}
			if err != nil {
				continue
			}
			for name, got := range map[string][]byte{"remote_addr": r.Addr, "method": r.Method, "host": r.Host} {
				if s, ok := obj[name].(string); ok && !strings.ContainsRune(s, utf8.RuneError) && string(got) != s {
					t.Fatalf("%s: %s is %q; encoding/json says %q", line, name, got, s)
				}
			}
		}
	})
}

func FuzzCSV(f *testing.F) {
	f.Add([]byte("2026-11-30T00:00:00Z,alice,1,/a\n2026-11-30T00:00:00Z,alice,10,/a\n2026-11-30T00:00:01Z,bob,,/b\n"))
	f.Add([]byte("user,ts,path\n\"carol\",1764460800,/x\n\"carol, jr\",1764460800,/y\n"))
	f.Add([]byte("time,user,path\n2026-11-30T00:00:00Z,\"o\"\"brien\",\"/a,\"\"b\"\"\"\n2026-11-30T00:00:00Z,\"carol\"x,/c\n"))
	f.Add([]byte("2026-11-30T00:00:00Z,a\"b,\"\",\"unclosed\n"))
	f.Fuzz(func(t *testing.T, log []byte) {
		for _, line := range bytes.Split(log, []byte("\n")) {
			if len(line) == 0 || bytes.IndexByte(line, '\r') >= 0 {
				continue
			}
			// Split the line as the parser does, and as encoding/csv does.
			p := newCSVParser(Fields{})
			var ours []string
			ok := true
			for i := 0; i <= len(line); {
				f, next, fok := p.field(line, i)
				if !fok {
					ok = false
					break
				}
				ours = append(ours, string(f))
				i = next
			}
			rd := csv.NewReader(bytes.NewReader(line))
			rd.FieldsPerRecord = -1
			theirs, err := rd.Read()
			if err != nil {
				continue // encoding/csv refuses it; we may be lazier about bare quotes
			}
			if !ok || strings.Join(ours, "\x00") != strings.Join(theirs, "\x00") || len(ours) != len(theirs) {
				t.Fatalf("%q: fields %q (ok %v); encoding/csv reads %q", line, ours, ok, theirs)
			}
		}
	})
}

// writtenShape is the shape in which servers write each layout: fields of
// their full width, months as "Feb", an offset's minutes under 60
// (time.Parse reads "+00:60" as +01:00; no server writes it).
var writtenShape = map[string]*regexp.Regexp{
	time.RFC3339Nano: regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:[0-5]\d)$`),
	TimeLayout:       regexp.MustCompile(`^\d{2}/(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{2}[0-5]\d$`),
}

func FuzzTimestamp(f *testing.F) {
	for _, s := range []string{
		"17/May/2015:10:05:03 +0000", "[01/Jan/2000:00:00:00 +0100]", "29/Feb/2024:23:59:59 -0730",
		"2015-05-17T10:05:03Z", "2015-05-17T10:05:03.250+02:00", "2015-05-17 10:05:03.123456789-0700",
		"2015-05-17T10:05:03", "1431857103", "1431857103.5", "1431857103500", "1431857103500000000",
		"2262-04-11T23:47:16.854775807Z", "1677-09-21T00:12:43.145224192Z", "9223372036.9", "[",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := ParseTime([]byte(s))
		// What the standard library reads as RFC 3339 or CLF time within
		// the int64 range, we read to the same instant. Our parsers take
		// the forms servers write (two-digit fields, "Feb"): they may
		// refuse what time.Parse also tolerates ("FeB", an hour of one
		// digit), never read it otherwise.
		for _, layout := range []string{time.RFC3339Nano, TimeLayout} {
			want, err := time.Parse(layout, s)
			if err != nil || want.Year() < 1678 || want.Year() > 2261 {
				continue
			}
			if !ok && !writtenShape[layout].MatchString(s) {
				continue // not as a server writes it: refused, and counted malformed
			}
			if !ok || got != want.UnixNano() {
				t.Fatalf("%q: %d, %v; time.Parse says %v", s, got, ok, want)
			}
		}
		// The CLF parser's cache agrees with a cold parse.
		if len(s) >= 20 {
			var c timeCache
			a, okA := c.clf([]byte(s))
			b, okB := c.clf([]byte(s))
			d, okD := parseCLFTime([]byte(s))
			if okA != okD || okB != okD || a != d || b != d {
				t.Fatalf("%q: cached %d %v, %d %v; cold %d %v", s, a, okA, b, okB, d, okD)
			}
		}
	})
}
