package replay

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/accesslog"
)

// An escaped request path is read decoded (accesslog's combined parser):
// a filter on /api/ sees \x2fapi/x as /api/x.
func TestCLFEscapedPathPassesTheFilter(t *testing.T) {
	log := `192.0.2.1 - - [17/May/2015:10:05:03 +0000] "GET \x2fapi/x HTTP/1.1" 200 5` + "\n"
	rep, err := Run(context.Background(), strings.NewReader(log), Config{
		Filter: Filter{PathPrefixes: []string{"/api/"}}, Policies: policies(t, "fixed_window:limit=1,window=1m"),
	})
	if err != nil || rep.Input.Simulated != 1 {
		t.Errorf("%v; simulated %d, want the escaped /api/ path to pass the filter", err, rep.Input.Simulated)
	}
}

// The gateway's own JSON access log, as gateway/observe/accesslog.go writes it.
const gatewayJSON = `{"time":"2026-11-30T01:00:00.5Z","remote_addr":"192.0.2.7","method":"GET","host":"api.example.com","uri":"/v1/items?page=2","status":200,"bytes":512,"duration_ms":1.250,"user_agent":"curl/8","rule":"","decision":"allowed"}
{"time":"2026-11-30T01:00:00.6Z","remote_addr":"192.0.2.7","method":"GET","host":"api.example.com","uri":"/v1/items","status":200,"bytes":512,"duration_ms":1.250,"user_agent":"curl/8","rule":"","decision":"allowed"}
{"time":"2026-11-30T01:00:00.7Z","remote_addr":"192.0.2.8","method":"POST","host":"api.example.com","uri":"/v1/orders","status":429,"bytes":0,"duration_ms":0.1,"user_agent":"x","rule":"per-ip","decision":"refused"}
`

func TestJSONLines(t *testing.T) {
	rep, err := Run(context.Background(), strings.NewReader(gatewayJSON), Config{
		Policies: policies(t, "fixed_window:limit=1,window=1s"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Input.Format != "json" || rep.Input.Simulated != 3 || rep.Input.Keys != 2 {
		t.Fatalf("input %+v", rep.Input)
	}
	if p := rep.Policies[0]; p.Refused != 1 || p.TopRefused[0].Key != "192.0.2.7" {
		t.Errorf("policy %+v; want 192.0.2.7's second request refused", p)
	}

	// Configurable field names, nested values skipped, a field as the key,
	// a numeric epoch time and a cost.
	in := `{"meta":{"time":"x","a":[1,{"b":"}"}]},"ts":1431857103,"tenant":"acme","w":3}
{"ts":1431857103.2,"tenant":"acme","w":3}
{"ts":1431857103.4,"tenant":"globex","w":1}
`
	var f accesslog.Fields
	if err := f.SetField("time=ts"); err != nil {
		t.Fatal(err)
	}
	if err := f.SetField("cost=w"); err != nil {
		t.Fatal(err)
	}
	key, err := ParseKeySpec("field:tenant")
	if err != nil {
		t.Fatal(err)
	}
	rep, err = Run(context.Background(), strings.NewReader(in), Config{
		Format: accesslog.FormatJSON, Fields: f, Key: key,
		Policies: policies(t, "token_bucket:rate=5/s,burst=5"),
	})
	if err != nil {
		t.Fatal(err)
	}
	// acme: cost 3 at t=0 leaves 2 tokens, cost 3 at 0.2 s (one more token
	// refilled: 3) passes... 2 + 0.2×5 = 3 ≥ 3, so both pass; globex passes.
	if p := rep.Policies[0]; rep.Input.Simulated != 3 || rep.Input.Keys != 2 || p.Refused != 0 {
		t.Errorf("input %+v, refused %d", rep.Input, p.Refused)
	}
	if rep.Busiest[0].Key != "acme" || rep.Busiest[0].Requests != 2 {
		t.Errorf("busiest %+v", rep.Busiest)
	}
}

func TestCSV(t *testing.T) {
	// Positional: timestamp,key,cost,path; a cost above the burst is refused.
	in := "2026-11-30T00:00:00Z,alice,1,/a\n2026-11-30T00:00:00Z,alice,10,/a\n2026-11-30T00:00:01Z,bob,,/b\n"
	rep, err := Run(context.Background(), strings.NewReader(in), Config{
		Key: mustKey(t, "key"), Policies: policies(t, "token_bucket:rate=1/s,burst=5"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Input.Format != "csv" || rep.Input.Simulated != 3 || rep.Policies[0].Refused != 1 {
		t.Errorf("input %+v, refused %d; want csv, 3, 1", rep.Input, rep.Policies[0].Refused)
	}
	// A header names the columns, in any order; quoted fields.
	in = "user,ts,path\n\"carol\",1764460800,/x\n\"carol, jr\",1764460800,/y\ncarol,1764460800,/x\n"
	var f accesslog.Fields
	if err := f.SetField("time=ts"); err != nil {
		t.Fatal(err)
	}
	rep, err = Run(context.Background(), strings.NewReader(in), Config{
		Format: accesslog.FormatCSV, Fields: f, Key: mustKey(t, "user,path"),
		Policies: policies(t, "fixed_window:limit=1,window=1m"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Input.Header != 1 || rep.Input.Simulated != 3 || rep.Input.Keys != 2 || rep.Policies[0].Refused != 1 {
		t.Errorf("header csv: input %+v, refused %d", rep.Input, rep.Policies[0].Refused)
	}
	if k := rep.Policies[0].TopRefused[0].Key; k != "carol|/x" {
		t.Errorf("refused key %q, want carol|/x", k)
	}
}

// JSON string escapes are decoded, in names and values alike: PHP writes
// "\/api\/x" by default, and a filter on /api/ must see /api/x.
func TestJSONStringEscapesAreDecoded(t *testing.T) {
	in := `{"time":"2026-11-30T00:00:00Z","remote_addr":"192.0.2.1","path":"\/api\/x"}
{"time":"2026-11-30T00:00:00Z","remote_addr":"192.0.2.1","p\u0061th":"\u002fapi\u002fx"}
{"t\u0069me":"2026-11-30T00:00:00Z","remote_addr":"192.0.2.1","path":"/api/x"}
{"time":"2026-11-30T00:00:00Z","remote_addr":"192.0.2.2","path":"/api/\"quoted\" \u00e9\ud83d\ude00"}
{"time":"2026-11-30T00:00:00Z","remote_addr":"192.0.2.1","path":"\/static\/y"}
`
	rep, err := Run(context.Background(), strings.NewReader(in), Config{
		Key: mustKey(t, "path"), Filter: Filter{PathPrefixes: []string{"/api/"}},
		Policies: policies(t, "fixed_window:limit=10,window=1m"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Input.Simulated != 4 || rep.Input.Filtered != 1 || rep.Input.Malformed != 0 {
		t.Fatalf("simulated %d, filtered %d, malformed %d; want 4, 1, 0", rep.Input.Simulated, rep.Input.Filtered, rep.Input.Malformed)
	}
	got := map[string]int64{}
	for _, b := range rep.Busiest {
		got[b.Key] = b.Requests
	}
	if got["/api/x"] != 3 || got[`/api/"quoted" é😀`] != 1 {
		t.Errorf("keys %v; want /api/x ×3 and /api/\"quoted\" é😀", got)
	}
}

// Quoted CSV fields are decoded as encoding/csv decodes them: a doubled
// quote is one quote, and text after a closing quote is malformed.
func TestCSVQuotedFieldsAreDecoded(t *testing.T) {
	in := "time,user,path\n" +
		"2026-11-30T00:00:00Z,\"o\"\"brien\",\"/a,\"\"b\"\"\"\n" +
		"2026-11-30T00:00:00Z,\"o\"\"brien\",\"/a,\"\"b\"\"\"\n" +
		"2026-11-30T00:00:00Z,\"\",\"\"\n" +
		"2026-11-30T00:00:00Z,\"carol\"x,/c\n" +
		"2026-11-30T00:00:00Z,\"unclosed,/c\n"
	rep, err := Run(context.Background(), strings.NewReader(in), Config{
		Format: accesslog.FormatCSV, Key: mustKey(t, "user,path"), Policies: policies(t, "fixed_window:limit=10,window=1m"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Input.Simulated != 3 || rep.Input.Malformed != 2 {
		t.Fatalf("simulated %d, malformed %d; want 3 and 2", rep.Input.Simulated, rep.Input.Malformed)
	}
	if b := rep.Busiest[0]; b.Key != `o"brien|/a,"b"` || b.Requests != 2 {
		t.Errorf("busiest %+v; want o\"brien|/a,\"b\" ×2", b)
	}
}

// When lines have no timestamp field, the report names the fields they
// have (JSON names, CSV header columns) and those it looked for.
func TestMissingTimestampFieldNamesTheFieldsSeen(t *testing.T) {
	for in, want := range map[string]string{
		`{"when":"2026-11-30T00:00:00Z","ip":"192.0.2.1","meta":{"time":"x"}}` + "\n": "when ip meta",
		"when,ip\n2026-11-30T00:00:00Z,192.0.2.1\n":                                   "when ip",
	} {
		rep, err := Run(context.Background(), strings.NewReader(in), Config{Policies: policies(t, "fixed_window:limit=1,window=1m")})
		if err != nil {
			t.Fatal(err)
		}
		in := rep.Input
		if in.Simulated != 0 || strings.Join(in.FieldsSeen, " ") != want || len(in.TimeFields) == 0 || in.TimeFields[0] != "time" {
			t.Errorf("%s: simulated %d, fields seen %q, looked for %q; want 0, %q, the defaults", want, in.Simulated, in.FieldsSeen, in.TimeFields, want)
		}
	}
}

func mustKey(t testing.TB, s string) KeySpec {
	t.Helper()
	k, err := ParseKeySpec(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestGzipInput(t *testing.T) {
	raw, err := os.ReadFile("testdata/apache_excerpt.log")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(raw)
	zw.Close()
	cfg := Config{Policies: policies(t, "token_bucket:rate=1/s,burst=20")}
	rep, err := Run(context.Background(), &buf, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// As the plain file: 373 requests, 35 refused (testdata/reference.py).
	if rep.Input.Simulated != 373 || rep.Policies[0].Refused != 35 {
		t.Errorf("gzip: %d simulated, %d refused; want 373, 35", rep.Input.Simulated, rep.Policies[0].Refused)
	}
}

func TestMalformedLinesSkipped(t *testing.T) {
	raw, err := os.ReadFile("testdata/apache_excerpt.log")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(raw), "\n")
	// Interleave 8 bad lines and 2 blank ones with the 373 good ones.
	var b strings.Builder
	bad := 0
	for i, l := range lines {
		if i%40 == 5 {
			b.WriteString("garbage line number " + string(rune('A'+bad)) + "\n")
			bad++
		}
		if i == 100 {
			b.WriteString("\n   \n")
			b.WriteString(strings.Repeat("x", readBufSize+10) + "\n") // too long
			bad++
		}
		b.WriteString(l)
	}
	rep, err := Run(context.Background(), strings.NewReader(b.String()), Config{
		Format: accesslog.FormatCombined, Examples: 3, Policies: policies(t, "token_bucket:rate=1/s,burst=20"),
	})
	if err != nil {
		t.Fatal(err)
	}
	in := rep.Input
	if in.Malformed != int64(bad) || in.Blank != 2 || in.Simulated != 373 || len(in.Examples) != 3 {
		t.Fatalf("input %+v; want %d malformed, 2 blank, 373 simulated, 3 examples", in, bad)
	}
	if in.Examples[0].Line != 6 || in.Examples[0].Text != "garbage line number A" || in.Examples[0].Reason == "" {
		t.Errorf("first example %+v", in.Examples[0])
	}
	if rep.Policies[0].Refused != 35 {
		t.Errorf("refused %d, want 35 as without the bad lines", rep.Policies[0].Refused)
	}
}
