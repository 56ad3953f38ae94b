package rules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The country, asn and ja4 key parts and the Countries, ASNs and JA4
// matchers (issue 26, items 4 and 5).
//
// Country and ASN come from Config.Geo applied to the client IP as
// ClientIP resolves it (trusted proxies only: a forwarded-for header from
// an untrusted peer moves neither). An address the database does not
// place is not missing: its country is UnknownCountry ("XX", the
// user-assigned ISO 3166 code Cloudflare's CF-IPCountry also sends for
// it) and its ASN is 0 (AS0, RFC 7607's "no AS"). Such clients are
// counted together under that value, and `countries: [XX]` or `asns: [0]`
// matches them. nginx's geoip2 module gives an empty value by default,
// and limit_req does not count an empty key: tollgate deliberately does
// not let an address the database misses (a new allocation, a private
// range behind a misconfigured proxy) escape a per-country limit. Only a
// request with no client IP at all has no country or ASN: the key is
// then missing (the rule does not apply unless Anonymous), and the
// matchers do not match.
//
// ja4 comes from the request's TLSFingerprint: a request not over TLS
// (or from a front end that does not capture it) has no fingerprint, its
// ja4 key part is missing and Match.JA4 does not match it. The
// fingerprint is computed by the server from the ClientHello; no header
// field can set it.

// UnknownCountry is the country key value, and the Match.Countries code,
// of a client address that the database places in no country.
const UnknownCountry = "XX"

// geoMatcher is the compiled Countries, ASNs and JA4 of a Match.
type geoMatcher struct {
	countries []string // upper case
	asns      []uint32
	ja4       []string // a part as written, b and c lower case
}

func (g *geoMatcher) empty() bool {
	return len(g.countries) == 0 && len(g.asns) == 0 && len(g.ja4) == 0
}

// compileGeoMatch compiles m's Countries, ASNs and JA4 under path.
func compileGeoMatch(m Match, path string, ps *problems) geoMatcher {
	at := func(field string, i int) string { return fmt.Sprintf("%s.%s[%d]", path, field, i) }
	var g geoMatcher
	for i, c := range m.Countries {
		code, ok := ParseCountry(c)
		if !ok {
			ps.add(at("countries", i), "%q is not an ISO 3166-1 alpha-2 country code (two letters, e.g. DE; XX for an address the database does not place)", c)
			continue
		}
		g.countries = appendOnce(g.countries, code, code, at("countries", i), ps)
	}
	for i, a := range m.ASNs {
		g.asns = appendOnce(g.asns, a, "AS"+strconv.FormatUint(uint64(a), 10), at("asns", i), ps)
	}
	for i, s := range m.JA4 {
		fp, ok := ParseJA4(s)
		if !ok {
			ps.add(at("ja4", i), "%q is not a JA4 fingerprint (a_b_c: 10 characters such as t13d1516h2, then two 12-digit hex hashes)", s)
			continue
		}
		g.ja4 = appendOnce(g.ja4, fp, fp, at("ja4", i), ps)
	}
	return g
}

// appendOnce appends v to list unless it is there already, which is a
// problem at "at" naming it as shown.
func appendOnce[T comparable](list []T, v T, shown, at string, ps *problems) []T {
	if slices.Contains(list, v) {
		ps.add(at, "%s is listed twice", shown)
		return list
	}
	return append(list, v)
}

// match reports whether the request of d is in one of the countries, one
// of the ASNs and has one of the fingerprints (each when listed).
func (g *geoMatcher) match(d *decision) bool {
	if len(g.countries) > 0 {
		c, ok := d.country()
		if !ok || !slices.Contains(g.countries, c) {
			return false
		}
	}
	if len(g.asns) > 0 {
		a, ok := d.asn()
		if !ok || !slices.Contains(g.asns, a) {
			return false
		}
	}
	if len(g.ja4) > 0 {
		fp := d.ja4()
		if fp == "" || !slices.Contains(g.ja4, fp) {
			return false
		}
	}
	return true
}

// country is the client IP's country code (UnknownCountry when the
// database does not place it); false when there is no client IP. It is
// looked up once per decision.
func (d *decision) country() (string, bool) {
	a := d.clientIP()
	if !a.IsValid() {
		return "", false
	}
	if !d.countryDone {
		c := ""
		if d.e.geo != nil {
			c = d.e.geo.Country(a)
		}
		if c == "" {
			c = UnknownCountry
		}
		d.countryCode, d.countryDone = c, true
	}
	return d.countryCode, true
}

// asn is the client IP's autonomous system number (0 when the database
// does not place it); false when there is no client IP.
func (d *decision) asn() (uint32, bool) {
	a := d.clientIP()
	if !a.IsValid() {
		return 0, false
	}
	if !d.asnDone {
		if d.e.geo != nil {
			d.asNumber = d.e.geo.ASN(a)
		}
		d.asnDone = true
	}
	return d.asNumber, true
}

// ja4 is the request's TLS fingerprint, or "".
func (d *decision) ja4() string {
	if t, ok := d.req.(TLSFingerprint); ok {
		return t.JA4()
	}
	return ""
}

// ParseCountry returns s as a country code, upper-cased ("de" gives
// "DE"), reporting whether it is two ASCII letters (surrounding space
// trimmed). Whether the code is assigned is not checked: databases
// carry codes such as EU and AP, and XX is UnknownCountry.
func ParseCountry(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) != 2 {
		return "", false
	}
	var b [2]byte
	for i := 0; i < 2; i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
		case c >= 'a' && c <= 'z':
			c -= 'a' - 'A'
		default:
			return "", false
		}
		b[i] = c
	}
	return string(b[:]), true
}

// ParseJA4 returns s as a JA4 fingerprint in the form package ja4 writes
// (its two hashes lower-cased), reporting whether it has JA4's shape:
// part a of 10 characters (protocol t, q or d; a two-character version;
// d or i; two two-digit counts; two ALPN characters), then "_" and two
// parts of 12 hex digits. The raw forms (JA4_r, JA4_o) are not accepted:
// rules compare JA4 itself.
func ParseJA4(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) != 36 || s[10] != '_' || s[23] != '_' {
		return "", false
	}
	a := s[:10]
	if !strings.ContainsRune("tqd", rune(a[0])) || !alnum(a[1]) || !alnum(a[2]) ||
		(a[3] != 'd' && a[3] != 'i') || !digits(a[4:8]) || !alnum(a[8]) || !alnum(a[9]) {
		return "", false
	}
	b := []byte(s)
	for _, i := range [...]int{11, 24} {
		for j := i; j < i+12; j++ {
			c := b[j]
			switch {
			case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
			case c >= 'A' && c <= 'F':
				b[j] = c + ('a' - 'A')
			default:
				return "", false
			}
		}
	}
	return string(b), true
}

func alnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// appendASN appends n in decimal.
func appendASN(dst []byte, n uint32) []byte { return strconv.AppendUint(dst, uint64(n), 10) }

// GeoCoverage is optionally implemented by a Geo that answers only one
// of country and ASN (a gateway given only a country database): New then
// refuses the parts and matchers it cannot answer, rather than count
// every client as unknown.
type GeoCoverage interface {
	HasCountry() bool
	HasASN() bool
}

// checkGeo refuses every use of the country and asn key parts and
// matchers that c.Geo cannot answer: in rules' keys, matches, tiers'
// identities, cost.by matches and except entries (theirs and the
// top-level ones).
func checkGeo(c *Config, ps *problems) {
	hasCountry, hasASN := c.Geo != nil, c.Geo != nil
	if cov, ok := c.Geo.(GeoCoverage); ok {
		hasCountry, hasASN = cov.HasCountry(), cov.HasASN()
	}
	if hasCountry && hasASN {
		return
	}
	needs := func(p string) (string, bool) {
		switch {
		case p == "country" && !hasCountry:
			return "needs a country database (Config.Geo; in a configuration file, geoip.country)", true
		case p == "asn" && !hasASN:
			return "needs an ASN database (Config.Geo; in a configuration file, geoip.asn)", true
		}
		return "", false
	}
	part := func(s, path string) {
		kind, _, _ := strings.Cut(strings.TrimSpace(s), ":")
		p := strings.ToLower(kind)
		if why, ok := needs(p); ok {
			ps.add(path, "the %s key part %s", p, why)
		}
	}
	key := func(k Key, path string) {
		for i, s := range k {
			part(s, fmt.Sprintf("%s[%d]", path, i))
		}
	}
	match := func(m *Match, path string) {
		if why, ok := needs("country"); ok && len(m.Countries) > 0 {
			ps.add(path+".countries", "matching by country %s", why)
		}
		if why, ok := needs("asn"); ok && len(m.ASNs) > 0 {
			ps.add(path+".asns", "matching by asn %s", why)
		}
	}
	except := func(ex []Except, path string) {
		for j := range ex {
			at := fmt.Sprintf("%s[%d]", path, j)
			match(&ex[j].Match, at)
			if ex[j].Key != "" {
				part(ex[j].Key, at+".key")
			}
		}
	}
	except(c.Except, "except")
	for i := range c.Rules {
		r := &c.Rules[i]
		where := fmt.Sprintf("rules[%d]", i)
		key(r.Key, where+".key")
		match(&r.Match, where+".match")
		if r.Tiers != nil {
			key(r.Tiers.Identity, where+".tiers.identity")
		}
		for j := range r.Cost.By {
			match(&r.Cost.By[j].Match, fmt.Sprintf("%s.cost.by[%d].match", where, j))
		}
		except(r.Except, where+".except")
	}
}
