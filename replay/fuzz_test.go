package replay

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/tollgate-dev/tollgate/accesslog"
	"github.com/tollgate-dev/tollgate/limit"
)

// Fuzz targets for what replay reads from untrusted input: a whole log
// (the line parsers alone are fuzzed in package accesslog, whose corpora
// FuzzRun's copies) and a policy. Each checks that nothing panics and,
// for a log, that every line is accounted for (a malformed line is
// counted as skipped, never dropped silently). Seeds: f.Add below and
// testdata/fuzz/FuzzXxx.

// FuzzRun replays log in every format, and detected.
func FuzzRun(f *testing.F) {
	f.Add([]byte(`192.0.2.9 - - [30/Nov/2026:02:00:00 +0100] "GET /v1/x HTTP/1.1" 429 57 "-" "curl/8" rule=per-ip decision=refused`))
	f.Add([]byte(`{"time":"2026-11-30T01:00:00.5Z","remote_addr":"192.0.2.7","method":"GET","host":"api.example.com","uri":"/v1/items?page=2","status":200}`))
	f.Add([]byte("user,ts,path\n\"carol\",1764460800,/x\n\"carol, jr\",1764460800,/y\n"))
	f.Add([]byte("\x1f\x8b\x08\x00garbage"))
	f.Fuzz(func(t *testing.T, log []byte) {
		for _, format := range []accesslog.Format{accesslog.FormatAuto, accesslog.FormatCombined, accesslog.FormatJSON, accesslog.FormatCSV} {
			checkAccounting(t, format, log)
		}
	})
}

// checkAccounting runs log through Run in format and checks that every
// line is counted exactly once.
func checkAccounting(t *testing.T, format accesslog.Format, log []byte) {
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
