package client

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

func TestParseAllowance(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	for _, tc := range []struct {
		name string
		h    http.Header
		want Allowance
		ok   bool
	}{
		{"none", hdr(), Allowance{}, false},
		// draft-10 (and -08/-09).
		{"draft10", hdr("RateLimit", `"default";r=50;t=30`), Allowance{50, 30 * time.Second, "default"}, true},
		{"draft10 no t", hdr("RateLimit", `"default";r=999;pk=:dHJpYWwxMjEzMjM=:`), Allowance{999, 0, "default"}, true},
		{"draft10 spaces after ;", hdr("RateLimit", `"name"; r=0; t=60`), Allowance{0, 60 * time.Second, "name"}, true},
		{"draft10 most restrictive", hdr("RateLimit", `"permin";r=10;t=20, "perhr";r=0;t=3000`), Allowance{0, 3000 * time.Second, "perhr"}, true},
		{"draft10 split lines", hdr("RateLimit", `"a";r=3;t=1`, "RateLimit", `"b";r=2;t=9`), Allowance{2, 9 * time.Second, "b"}, true},
		{"draft10 unknown params", hdr("RateLimit", `"d";r=1;t=2;acme-x=?1`), Allowance{1, 2 * time.Second, "d"}, true},
		{"draft10 w from policy", hdr("RateLimit", `"fixedwindow";r=0`, "RateLimit-Policy", `"fixedwindow";q=100;w=60`), Allowance{0, time.Minute, "fixedwindow"}, true},
		{"draft10 bad policy ignored", hdr("RateLimit", `"fw";r=0`, "RateLimit-Policy", `"fw";w=60`), Allowance{0, 0, "fw"}, true},
		{"draft10 missing r", hdr("RateLimit", `"default";t=30`), Allowance{}, false},
		{"draft10 negative r", hdr("RateLimit", `"default";r=-1;t=30`), Allowance{}, false},
		{"draft10 decimal t", hdr("RateLimit", `"default";r=1;t=1.5`), Allowance{}, false},
		{"draft10 token name", hdr("RateLimit", `default;r=1;t=1`), Allowance{}, false},
		{"draft10 one bad item voids field", hdr("RateLimit", `"a";r=0;t=5, "b";r=x`), Allowance{}, false},
		{"draft10 trailing comma", hdr("RateLimit", `"a";r=0;t=5,`), Allowance{}, false},
		{"draft10 inner list", hdr("RateLimit", `("a");r=0;t=5`), Allowance{}, false},
		{"draft10 16 digits", hdr("RateLimit", `"a";r=1000000000000000;t=5`), Allowance{}, false},
		// several styles: the least remaining, then the most precise reset
		{"draft10 over epoch", hdr("RateLimit", `"api";r=0;t=2`, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(now.Unix()+3, 10)), Allowance{0, 2 * time.Second, "api"}, true},
		{"draft6 over x delta", hdr("RateLimit-Remaining", "1", "RateLimit-Reset", "2", "X-RateLimit-Remaining", "1", "X-RateLimit-Reset", "3"), Allowance{1, 2 * time.Second, ""}, true},
		{"x fewer remaining", hdr("RateLimit", `"api";r=3;t=2`, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "9"), Allowance{0, 9 * time.Second, ""}, true},
		// draft-07 dictionary.
		{"draft7", hdr("RateLimit", "limit=100, remaining=0, reset=5"), Allowance{0, 5 * time.Second, ""}, true},
		{"draft7 bad", hdr("RateLimit", "limit=100, remaining=?0, reset=5"), Allowance{}, false},
		// draft-00..06 items.
		{"draft6", hdr("RateLimit-Limit", "100", "RateLimit-Remaining", "0", "RateLimit-Reset", "50"), Allowance{0, 50 * time.Second, ""}, true},
		{"draft6 params ignored", hdr("RateLimit-Remaining", "3;w=1", "RateLimit-Reset", "7"), Allowance{3, 7 * time.Second, ""}, true},
		{"draft6 bad reset", hdr("RateLimit-Remaining", "0", "RateLimit-Reset", "soon"), Allowance{}, false},
		{"draft6 negative", hdr("RateLimit-Remaining", "-2"), Allowance{}, false},
		// X-RateLimit-*: delta, epoch seconds, epoch ms, HTTP-date.
		{"x delta", hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "12"), Allowance{0, 12 * time.Second, ""}, true},
		{"x epoch s", hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(now.Unix()+90, 10)), Allowance{0, 90 * time.Second, ""}, true},
		{"x epoch ms", hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(now.UnixMilli()+1500, 10)), Allowance{0, 1500 * time.Millisecond, ""}, true},
		{"x epoch past", hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(now.Unix()-5, 10)), Allowance{0, 0, ""}, true},
		{"x http-date", hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", now.Add(7*time.Second).UTC().Format(http.TimeFormat)), Allowance{0, 7 * time.Second, ""}, true},
		{"x dash spelling", hdr("X-Rate-Limit-Remaining", "4", "X-Rate-Limit-Reset", "1"), Allowance{4, time.Second, ""}, true},
		{"x bad remaining", hdr("X-RateLimit-Remaining", "lots", "X-RateLimit-Reset", "1"), Allowance{}, false},
		{"x bad reset", hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "-1"), Allowance{}, false},
		// Several families at once: the most restrictive wins.
		{"mixed", hdr("RateLimit", `"d";r=5;t=1`, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "3"), Allowance{0, 3 * time.Second, ""}, true},
		{"mixed with malformed", hdr("RateLimit", `"d";r=5;t=1`, "X-RateLimit-Remaining", "zero"), Allowance{5, time.Second, "d"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseAllowance(tc.h, now)
			if got != tc.want || ok != tc.ok {
				t.Errorf("ParseAllowance(%v) = %+v, %v; want %+v, %v", tc.h, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// FuzzParseAllowance: no input makes the parsers panic, and whatever they
// accept is a non-negative allowance.
func FuzzParseAllowance(f *testing.F) {
	f.Add(`"default";r=50;t=30`, `"default";q=100;w=60`, "0", "1700000000", "5")
	f.Add(`limit=100, remaining=0, reset=5`, ``, "x", "", "Sun, 06 Nov 1994 08:49:37 GMT")
	f.Add(`"p";r=0`, `"p";q=5;w=2`, "3", "1700000000000", "-1")
	f.Fuzz(func(t *testing.T, rl, policy, xRemaining, xReset, retry string) {
		h := http.Header{}
		for k, v := range map[string]string{"Ratelimit": rl, "Ratelimit-Policy": policy, "X-Ratelimit-Remaining": xRemaining, "X-Ratelimit-Reset": xReset, "Ratelimit-Remaining": xRemaining, "Ratelimit-Reset": retry} {
			if v != "" {
				h[k] = []string{v}
			}
		}
		now := time.Unix(1_700_000_000, 0)
		if a, ok := ParseAllowance(h, now); ok && (a.Remaining < 0 || a.Reset < 0) {
			t.Fatalf("negative allowance %+v from %v", a, h)
		}
		if d, ok := ParseRetryAfter(retry, now); ok && d < 0 {
			t.Fatalf("negative Retry-After %v from %q", d, retry)
		}
	})
}

// TestHTTPSFVPanicIgnored: inputs on which httpsfv v1.1.0 panics are
// malformed fields, ignored, whichever field carries them.
func TestHTTPSFVPanicIgnored(t *testing.T) {
	for _, v := range []string{"@", "@-", `"a";r=@`, `"a";r=0;t=@-`} {
		for _, field := range []string{"Ratelimit", "Ratelimit-Policy", "Ratelimit-Remaining", "Ratelimit-Reset"} {
			h := http.Header{field: {v}}
			if field == "Ratelimit-Policy" {
				h["Ratelimit"] = []string{`"a";r=0`}
			}
			if field == "Ratelimit-Reset" {
				h["Ratelimit-Remaining"] = []string{"0"}
			}
			a, ok := ParseAllowance(h, time.Now())
			if ok && a.Reset != 0 {
				t.Errorf("%s: %q gave %+v", field, v, a)
			}
		}
	}
}
