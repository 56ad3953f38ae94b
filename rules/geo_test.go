package rules

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

// fakeGeo places addresses by prefix, first match wins; it allocates
// nothing. (The MaxMind-backed Geo, package geoip's, is tested over a
// real database in geoip and through the gateway.)
type fakeGeo []geoEntry

type geoEntry struct {
	pfx     netip.Prefix
	country string
	asn     uint32
}

func (g fakeGeo) find(a netip.Addr) *geoEntry {
	for i := range g {
		if g[i].pfx.Contains(a) {
			return &g[i]
		}
	}
	return nil
}

func (g fakeGeo) Country(a netip.Addr) string {
	if e := g.find(a); e != nil {
		return e.country
	}
	return ""
}

func (g fakeGeo) ASN(a netip.Addr) uint32 {
	if e := g.find(a); e != nil {
		return e.asn
	}
	return 0
}

var testGeo = fakeGeo{
	{netip.MustParsePrefix("192.0.2.0/25"), "DE", 64496},
	{netip.MustParsePrefix("192.0.2.128/25"), "DE", 64497},
	{netip.MustParsePrefix("198.51.100.0/24"), "US", 64496},
	{netip.MustParsePrefix("2001:db8::/32"), "FR", 64511},
}

// tlsReq is a request with a TLS fingerprint.
type tlsReq struct {
	*req
	fp string
}

func (r tlsReq) JA4() string { return r.fp }

const (
	fpCurl   = "t13d4907h2_0d8feac7bc37_7395dae3b2f3"
	fpChrome = "t13d1516h2_8daaf6152771_02713d6af862"
)

// remaining is the rule's remaining count after deciding r.
func remaining(t *testing.T, e *Engine, r Request) string {
	t.Helper()
	res := decide(t, e, r)
	if !res.Matched() {
		return "unmatched"
	}
	return strconv.FormatInt(res.Decision.Remaining, 10)
}

func TestCountryKeySharesOneCounterPerCountry(t *testing.T) {
	e, _ := newEngine(t, Config{Geo: testGeo, Rules: []Rule{{
		Name: "per-country", Key: Key{"country"}, Policies: []Policy{{Algorithm: "fixed_window", Limit: 10, Window: "1m"}},
	}}})
	steps := []struct{ ip, want string }{
		{"192.0.2.1", "9"},   // DE
		{"192.0.2.200", "8"}, // DE, another network of it
		{"198.51.100.7", "9"},
		{"203.0.113.1", "9"}, // unknown: XX
		{"203.0.113.99", "8"},
		{"2001:db8::1", "9"},
		{"::ffff:192.0.2.3", "7"}, // a mapped IPv4 address is that address
	}
	for _, s := range steps {
		if got := remaining(t, e, get("/", s.ip)); got != s.want {
			t.Errorf("%s: remaining %s, want %s", s.ip, got, s.want)
		}
	}
}

func TestASNKey(t *testing.T) {
	e, _ := newEngine(t, Config{Geo: testGeo, Rules: []Rule{{
		Name: "per-asn", Key: Key{"asn", "country"}, Policies: []Policy{{Algorithm: "fixed_window", Limit: 10, Window: "1m"}},
	}}})
	steps := []struct{ ip, want string }{
		{"192.0.2.1", "9"},    // 64496 DE
		{"192.0.2.2", "8"},    // 64496 DE
		{"192.0.2.200", "9"},  // 64497 DE
		{"198.51.100.7", "9"}, // 64496 US: another key
		{"203.0.113.1", "9"},  // 0 XX
	}
	for _, s := range steps {
		if got := remaining(t, e, get("/", s.ip)); got != s.want {
			t.Errorf("%s: remaining %s, want %s", s.ip, got, s.want)
		}
	}
	// The store key holds the values as written: "64496" and "DE".
	res := decide(t, e, get("/", "192.0.2.1"))
	if k := res.at(0).key; !strings.HasSuffix(k, "64496"+keySep+"DE") {
		t.Fatalf("store key %q", k)
	}
}

// The country is the resolved client's: a forwarded-for header counts
// only from a trusted proxy.
func TestCountryOfTheResolvedClientOnly(t *testing.T) {
	e, _ := newEngine(t, Config{Geo: testGeo,
		ClientIP: ClientIP{TrustedProxies: []string{"10.0.0.0/8"}, Header: "X-Forwarded-For"},
		Rules: []Rule{{
			Name: "us", Match: Match{Countries: []string{"US"}}, Policies: []Policy{{Algorithm: "fixed_window", Limit: 10, Window: "1m"}},
		}}})
	if got := remaining(t, e, get("/", "10.1.1.1").with("X-Forwarded-For", "198.51.100.7")); got != "9" {
		t.Fatalf("through a trusted proxy: %s", got)
	}
	if got := remaining(t, e, get("/", "192.0.2.1").with("X-Forwarded-For", "198.51.100.7")); got != "unmatched" {
		t.Fatalf("a DE peer claiming a US address: %s", got)
	}
}

func TestGeoMatchers(t *testing.T) {
	e, _ := newEngine(t, Config{Geo: testGeo, Rules: []Rule{
		{Name: "eu", Match: Match{Countries: []string{"de", " FR"}}, Policies: oneRate},
		{Name: "cloud", Match: Match{ASNs: []uint32{64497}}, Policies: oneRate},
		{Name: "unknown", Match: Match{Countries: []string{UnknownCountry}}, Policies: oneRate},
		{Name: "no-as", Match: Match{ASNs: []uint32{0}}, Policies: oneRate},
		{Name: "both", Match: Match{Countries: []string{"US"}, ASNs: []uint32{64496}, Paths: []string{"/both"}}, Policies: oneRate},
		{Name: "bot", Match: Match{JA4: []string{fpCurl[:11] + strings.ToUpper(fpCurl[11:])}}, Policies: oneRate},
	}})
	cases := []struct {
		r    Request
		want []string
	}{
		{get("/", "192.0.2.1"), []string{"eu"}},
		{get("/", "192.0.2.129"), []string{"eu", "cloud"}},
		{get("/", "2001:db8::5"), []string{"eu"}},
		{get("/", "203.0.113.1"), []string{"unknown", "no-as"}},
		{get("/both", "198.51.100.1"), []string{"both"}},
		{get("/", "198.51.100.1"), nil},
		{tlsReq{get("/", "198.51.100.1"), fpCurl}, []string{"bot"}},
		{tlsReq{get("/", "198.51.100.1"), fpChrome}, nil},
		{tlsReq{get("/", "198.51.100.1"), ""}, nil},
		// A header cannot set the fingerprint.
		{get("/", "198.51.100.1").with("Ja4", fpCurl).with("X-Ja4", fpCurl), nil},
	}
	for i, c := range cases {
		res := decide(t, e, c.r)
		var got []string
		for j := 0; j < res.n; j++ {
			got = append(got, res.at(j).rule.name)
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("case %d: rules %v, want %v", i, got, c.want)
		}
	}
}

func TestJA4Key(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{
		{Name: "fp", Key: Key{"ja4"}, Policies: []Policy{{Algorithm: "fixed_window", Limit: 10, Window: "1m"}}},
	}})
	steps := []struct {
		r    Request
		want string
	}{
		{tlsReq{get("/", "192.0.2.1"), fpCurl}, "9"},
		{tlsReq{get("/", "192.0.2.2"), fpCurl}, "8"}, // another address, same stack
		{tlsReq{get("/", "192.0.2.1"), fpChrome}, "9"},
		{get("/", "192.0.2.1").with("Ja4", fpCurl), "unmatched"}, // not TLS: no key, not counted
		{tlsReq{get("/", "192.0.2.1"), ""}, "unmatched"},
	}
	for i, s := range steps {
		if got := remaining(t, e, s.r); got != s.want {
			t.Errorf("step %d: remaining %s, want %s", i, got, s.want)
		}
	}
	// Anonymous: the requests without a fingerprint share one counter.
	e, _ = newEngine(t, Config{Rules: []Rule{
		{Name: "fp", Key: Key{"ja4"}, Anonymous: true, Policies: []Policy{{Algorithm: "fixed_window", Limit: 10, Window: "1m"}}},
	}})
	for i, want := range []string{"9", "8"} {
		if got := remaining(t, e, get("/", "192.0.2.1")); got != want {
			t.Errorf("anonymous %d: %s, want %s", i, got, want)
		}
	}
}

// Without a client IP there is no country: the key is missing.
func TestCountryWithoutClientIP(t *testing.T) {
	e, _ := newEngine(t, Config{Geo: testGeo, Rules: []Rule{
		{Name: "c", Key: Key{"country"}, Policies: oneRate},
		{Name: "m", Match: Match{Countries: []string{"XX"}}, Policies: oneRate},
	}})
	r := get("/", "192.0.2.1")
	r.remote = netip.AddrPort{}
	if res := decide(t, e, r); res.Matched() {
		t.Fatalf("matched %d rules", res.n)
	}
}

func TestGeoValidation(t *testing.T) {
	c := Config{Rules: []Rule{
		{Name: "a", Key: Key{"country"}, Policies: oneRate},
		{Name: "b", Key: Key{"ip", "ASN"}, Match: Match{Countries: []string{"DE"}, ASNs: []uint32{1}}, Policies: oneRate},
		{Name: "c", Policies: oneRate, Cost: Cost{By: []CostBy{{Match: Match{Countries: []string{"US"}}, Cost: 2}}}},
		{Name: "d", Tiers: &Tiers{Identity: Key{"asn"}, Plans: map[string][]Policy{"free": oneRate}, Default: "free"}},
		{Name: "fp", Key: Key{"ja4"}, Match: Match{JA4: []string{fpCurl}}, Policies: oneRate}, // no Geo needed
	}}
	err := c.Validate()
	want := []string{
		"rules[0].key[0]: the country key part needs a country database",
		"rules[1].key[1]: the asn key part needs",
		"rules[1].match.countries: matching by country needs",
		"rules[1].match.asns: matching by asn needs",
		"rules[2].cost.by[0].match.countries: matching by country needs",
		"rules[3].tiers.identity[0]: the asn key part needs",
	}
	checkProblems(t, err, want)
	if strings.Contains(err.Error(), "rules[4]") {
		t.Fatalf("ja4 refused: %v", err)
	}

	// A Geo answering only countries.
	c.Geo = countryOnly{testGeo}
	checkProblems(t, c.Validate(), []string{want[1], want[3], want[5]})
	c.Rules = c.Rules[:1]
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}

	c = Config{Geo: testGeo, Rules: []Rule{
		{Name: "a", Key: Key{"country:x"}, Policies: oneRate},
		{Name: "b", Match: Match{Countries: []string{"DE", "D", "DEU", "1A", "de", "É"}}, Policies: oneRate},
		{Name: "c", Match: Match{ASNs: []uint32{5, 5}}, Policies: oneRate},
		{Name: "d", Match: Match{JA4: []string{
			fpCurl,
			"t13d4907h2_0d8feac7bc37",                // two parts
			"t13d4907h2_0d8feac7bc37_7395dae3b2fg",   // not hex
			"x13d4907h2_0d8feac7bc37_7395dae3b2f3",   // protocol
			"t13x4907h2_0d8feac7bc37_7395dae3b2f3",   // d or i
			"t13d49a7h2_0d8feac7bc37_7395dae3b2f3",   // counts
			"t13d4907h2_0d8feac7bc37_7395dae3b2f3_x", // too long
			"t13d4907h2_0D8FEAC7BC37_7395dae3b2f3",   // the same, upper-case hash
		}}, Policies: oneRate},
	}}
	err = c.Validate()
	want = []string{
		`rules[0].key[0]: "country:x" takes no name`,
		`rules[1].match.countries[1]: "D" is not`,
		`rules[1].match.countries[2]: "DEU" is not`,
		`rules[1].match.countries[3]: "1A" is not`,
		`rules[1].match.countries[4]: DE is listed twice`,
		`rules[1].match.countries[5]: "É" is not`,
		`rules[2].match.asns[1]: AS5 is listed twice`,
		`rules[3].match.ja4[1]: "t13d4907h2_0d8feac7bc37" is not a JA4`,
		`rules[3].match.ja4[2]:`,
		`rules[3].match.ja4[3]:`,
		`rules[3].match.ja4[4]:`,
		`rules[3].match.ja4[5]:`,
		`rules[3].match.ja4[6]:`,
		`rules[3].match.ja4[7]: ` + fpCurl + ` is listed twice`,
	}
	checkProblems(t, err, want)
}

type countryOnly struct{ fakeGeo }

func (countryOnly) HasCountry() bool { return true }
func (countryOnly) HasASN() bool     { return false }

// checkProblems requires err to hold exactly the problems starting with
// want, in any order.
func checkProblems(t *testing.T, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatal("valid")
	}
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatal("not ErrInvalidConfig")
	}
	got := strings.Split(err.Error(), "\n")
	if len(got) != len(want) {
		t.Errorf("%d problems, want %d:\n%v", len(got), len(want), err)
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			if strings.HasPrefix(g, w) {
				found = true
			}
		}
		if !found {
			t.Errorf("no problem %q in:\n%v", w, err)
		}
	}
}

func TestParseCountryAndJA4(t *testing.T) {
	for in, want := range map[string]string{"de": "DE", "Us": "US", " XX ": "XX"} {
		if got, ok := ParseCountry(in); !ok || got != want {
			t.Errorf("ParseCountry(%q) = %q, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "D", "D1", "ÄB", "DEU"} {
		if _, ok := ParseCountry(in); ok {
			t.Errorf("ParseCountry(%q) ok", in)
		}
	}
	if got, ok := ParseJA4("t13i0000h1_000000000000_000000000000"); !ok || got != "t13i0000h1_000000000000_000000000000" {
		t.Errorf("ParseJA4: %q %v", got, ok)
	}
}

func TestDecideAllocatesNothingForACountryKey(t *testing.T) {
	e, _ := newEngine(t, Config{Geo: testGeo, Rules: []Rule{
		{Name: "per-country", Key: Key{"country", "asn"}, Match: Match{Countries: []string{"DE", "US"}, ASNs: []uint32{64496}}, Policies: []Policy{{Rate: "1000000/s"}}},
		{Name: "fp", Key: Key{"ja4"}, Match: Match{JA4: []string{fpCurl}}, Policies: []Policy{{Rate: "1000000/s"}}},
	}})
	r := tlsReq{get("/items/1", "192.0.2.1"), fpCurl}
	if n := allowedAllocs(t, e, r); n != 0 {
		t.Fatalf("%v allocs per allowed request, want 0", n)
	}
	res := decide(t, e, r)
	if res.n != 2 {
		t.Fatalf("%d rules applied, want 2", res.n)
	}
}

// BenchmarkDecideCountry is BenchmarkDecideIP keyed by country (the
// lookup itself is fakeGeo's; geoip's is benchmarked there).
func BenchmarkDecideCountry(b *testing.B) {
	e, _ := newEngine(b, Config{Geo: testGeo, Rules: []Rule{{Name: "per-country", Key: Key{"country"}, Policies: []Policy{{Rate: "1000000000/s"}}}}})
	r := get("/items/1", "192.0.2.1")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if res, _ := e.Decide(ctx, r); res.Outcome != Allowed {
			b.Fatal(res.Outcome)
		}
	}
}

// FuzzGeoParse: ParseJA4 and ParseCountry never panic, and what they
// accept is in canonical form (parsing it again gives it back): a
// fingerprint of 36 bytes with lower-case hashes, a code of two upper
// ASCII letters.
func FuzzGeoParse(f *testing.F) {
	for _, s := range []string{fpCurl, strings.ToUpper(fpChrome), "de", "É", "t13d4907h2_0d8feac7bc37", " " + fpCurl + " ", "q00i0000zz_000000000000_FFFFFFFFFFFF"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if fp, ok := ParseJA4(s); ok {
			if len(fp) != 36 || strings.ContainsAny(fp[11:], "ABCDEF") {
				t.Fatalf("ParseJA4(%q) = %q", s, fp)
			}
			if again, ok := ParseJA4(fp); !ok || again != fp {
				t.Fatalf("ParseJA4(%q) = %q, then %q %v", s, fp, again, ok)
			}
		}
		if c, ok := ParseCountry(s); ok {
			if len(c) != 2 || c[0] < 'A' || c[0] > 'Z' || c[1] < 'A' || c[1] > 'Z' {
				t.Fatalf("ParseCountry(%q) = %q", s, c)
			}
			if again, ok := ParseCountry(c); !ok || again != c {
				t.Fatalf("ParseCountry(%q) = %q, then %q", s, c, again)
			}
		}
	})
}
