package replay

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/limit"
)

// Fuzz targets for every parser replay runs on untrusted input. Each
// checks that nothing panics and that every line is accounted for (a
// malformed line is counted as skipped, never dropped silently); where a
// standard decoder exists, the parser must agree with it. Seeds: f.Add
// below and testdata/fuzz/FuzzXxx.

// checkAccounting runs log through Run in format and checks that every
// line is counted exactly once.
func checkAccounting(t *testing.T, format Format, log []byte) {
	t.Helper()
	rep, err := Run(context.Background(), bytes.NewReader(log), Config{
		Format: format, Key: mustKey(t, "ip,path"), ReorderLines: 16,
		Filter:   Filter{Methods: []string{"GET", "POST", ""}},
		Policies: policies(t, "token_bucket:rate=2/s,burst=3", "sliding_window:limit=3,window=1m"),
	})
	if err != nil {
		if bytes.HasPrefix(log, []byte{0x1f, 0x8b}) { // gzip magic: a broken stream is a read error
			return
		}
		t.Fatalf("Run: %v", err)
	}
	in := rep.Input
	if got := in.Blank + in.Header + in.Malformed + in.Filtered + in.Simulated; got != in.Lines {
		t.Fatalf("%d lines read, %d accounted for: %+v", in.Lines, got, in)
	}
	for _, p := range rep.Policies {
		if p.Requests != in.Simulated || p.Refused < 0 || p.Refused > p.Requests {
			t.Fatalf("%s: %d requests, %d refused, %d simulated", p.Name, p.Requests, p.Refused, in.Simulated)
		}
	}
	if err := WriteText(io.Discard, rep); err != nil {
		t.Fatal(err)
	}
}

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
			var a, b record
			a.reset(0)
			b.reset(0)
			errA := warm.parse(line, &a)
			errB := warm.parse(line, &b)
			var cold clfParser
			var c record
			c.reset(0)
			errC := cold.parse(line, &c)
			if errA != errC || errB != errC || a.Time != c.Time || b.Time != c.Time {
				t.Fatalf("%q: %v %v %v, times %d %d %d", line, errA, errB, errC, a.Time, b.Time, c.Time)
			}
			if errC == nil && len(c.Status) == 0 {
				t.Fatalf("%q parsed without a status", line)
			}
		}
		checkAccounting(t, FormatCombined, log)
	})
}

// distinctKeys reports whether line is one JSON object whose top-level
// names are all distinct (encoding/json keeps the last of equal names,
// replay the first).
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
			var r record
			r.reset(0)
			err := p.parse(line, &r)
			var obj map[string]any
			if json.Unmarshal(line, &obj) != nil || obj == nil || !distinctKeys(line) || !utf8.Valid(line) {
				continue
			}
			// encoding/json reads it: so must we, to the same strings.
			if err == errSyntax {
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
		checkAccounting(t, FormatJSON, log)
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
		checkAccounting(t, FormatCSV, log)
	})
}

// clfLayout is the common log format's time, as servers write it.
const clfLayout = "02/Jan/2006:15:04:05 -0700"

// writtenShape is the shape in which servers write each layout: fields of
// their full width, months as "Feb".
var writtenShape = map[string]*regexp.Regexp{
	time.RFC3339Nano: regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`),
	clfLayout:        regexp.MustCompile(`^\d{2}/(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}$`),
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
		got, ok := parseAnyTime([]byte(s))
		// What the standard library reads as RFC 3339 or CLF time within
		// the int64 range, we read to the same instant. Our parsers take
		// the forms servers write (two-digit fields, "Feb"): they may
		// refuse what time.Parse also tolerates ("FeB", an hour of one
		// digit), never read it otherwise.
		for _, layout := range []string{time.RFC3339Nano, clfLayout} {
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

// normal spells a policy's defaults out: a token bucket's zero burst is
// its rate's count.
func normal(p limit.Policy) limit.Policy {
	if tb, ok := p.(limit.TokenBucket); ok && tb.Burst == 0 {
		tb.Burst = tb.Rate.Count
		return tb
	}
	return p
}

func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{
		"token_bucket:rate=10/s,burst=20", "sliding_window:limit=100,window=1m", "fixed_window:rate=7/90s,name=x",
		"leaky_bucket:rate=1/s,burst=10,mode=police", "leaky_bucket:rate=5/m,burst=4,delay=2", "sliding_log:limit=1,window=1d",
		"gcra:rate=1/s", "token_bucket:rate=99999999999999999999/s", "fixed_window:limit=-1,window=0s", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePolicy(s)
		if err != nil {
			return
		}
		if err := p.Policy.Validate(); err != nil {
			t.Fatalf("%q parsed to an invalid policy %v: %v", s, p.Policy, err)
		}
		// What the report writes in -policy syntax reads back as the same.
		flag := policyFlag(p.Policy)
		back, err := ParsePolicy(flag)
		if err != nil || normal(back.Policy) != normal(p.Policy) {
			t.Fatalf("%q: written %q, read back as %v, %v; want %v", s, flag, back.Policy, err, p.Policy)
		}
	})
}
