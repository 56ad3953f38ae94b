package client

import (
	"net/http"
	"regexp"
	"testing"
	"time"
)

var fastSeeds = []string{
	`"default";r=50;t=30`,
	`"api";r=0;t=1`,
	`"name"; r=99; t=60`,
	`"permin";r=10;t=20, "perhr";r=0;t=3000`,
	`"a";r=3;t=1,"b";r=2;t=9`,
	`"d";r=1;t=2;acme-x=7`,
	`"d";r=1;t=2;r=5`,
	`  "d";r=1;t=2  `,
	`"d";r=1;t=2,`,
	`"d";r=1;t=2.5`,
	`"d";r=-1;t=2`,
	`"d";r=1`,
	`"d";t=1`,
	`"d\"x";r=1;t=1`,
	`d;r=1;t=1`,
	`"d";r=1;t=1;flag`,
	`"d";r=1000000000000000;t=1`,
	`"d";r=999999999999999;t=1`, // 15 digits: valid
	`"d";r=99999999999999;t=1`,
	`"d";R=1;t=1`,
	`"d";r=1;t=1	,	"e";r=0;t=4`,
	`"d";r=1;t=1 x`,
	`("d");r=1;t=1`,
	`"";r=0;t=0`,
	``,
}

// httpsfvMaxInteger matches what github.com/dunglas/httpsfv v1.1.0 gets
// wrong: it refuses a 15-digit Integer (valid: RFC 9651 allows up to 15)
// when anything follows it, such as ";t=1". The fast parser follows the RFC.
var httpsfvMaxInteger = regexp.MustCompile(`(^|[^0-9])[0-9]{15}[^0-9]`)

// FuzzFastRateLimitList: whenever the allocation-free parser handles an
// input, it agrees with the general Structured Field parser (except where
// that parser has the bug above).
func FuzzFastRateLimitList(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, ok, handled := fastRateLimitList([]string{s})
		if !handled {
			return
		}
		if httpsfvMaxInteger.MatchString(s) {
			return
		}
		b, okb := parseRateLimitListSF([]string{s}, nil)
		if a != b || ok != okb {
			t.Fatalf("%q: fast %+v %v, general %+v %v", s, a, ok, b, okb)
		}
	})
}

func TestFastRateLimitListHandlesCommonShapes(t *testing.T) {
	for _, s := range []string{
		`"api";r=0;t=1`,                         // tollgate's httplimit
		`"name"; r=99; t=60`,                    // express-rate-limit draft-8
		`"burst";r=40;t=12, "daily";r=0;t=3600`, // several policies
	} {
		if _, ok, handled := fastRateLimitList([]string{s}); !handled || !ok {
			t.Errorf("%q: handled=%v ok=%v, want the fast path", s, handled, ok)
		}
	}
}

func TestParseAllowanceDraft10AllocatesNothing(t *testing.T) {
	h := http.Header{"Ratelimit": {`"burst";r=40;t=12, "daily";r=0;t=3600`}, "Ratelimit-Policy": {`"burst";q=100;w=60, "daily";q=1000;w=86400`}}
	now := time.Now()
	if n := testing.AllocsPerRun(100, func() { ParseAllowance(h, now) }); n != 0 {
		t.Errorf("ParseAllowance allocates %v times for a draft-10 field", n)
	}
}

func TestFastRateLimitListFifteenDigits(t *testing.T) {
	a, ok, handled := fastRateLimitList([]string{`"d";r=999999999999999;t=1`})
	if !handled || !ok || a.Remaining != 999999999999999 {
		t.Errorf("15-digit r: %+v ok=%v handled=%v", a, ok, handled)
	}
}
