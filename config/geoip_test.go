package config

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/geoiptest"
)

const geoYAML = `routes: [{path: /, upstream: demo}]
geoip:
  country: geo.mmdb
  asn: geo.mmdb
rules:
  - name: per-country
    key: [country]
    policies: [{rate: 100/s}]
  - name: cloud
    match: {asns: [64500], countries: [de]}
    key: [asn, ja4]
    policies: [{rate: 10/s}]
`

func writeGeo(t *testing.T, dir string) {
	t.Helper()
	err := geoiptest.WriteFile(filepath.Join(dir, "geo.mmdb"),
		geoiptest.Network{CIDR: "192.0.2.0/24", Country: "DE", ASN: 64500},
		geoiptest.Network{CIDR: "198.51.100.0/24", Country: "US", ASN: 64501})
	if err != nil {
		t.Fatal(err)
	}
}

// The section opens its databases relative to the file, hands them to
// the rule engine, and check describes it all in words.
func TestGeoIPSection(t *testing.T) {
	dir := t.TempDir()
	writeGeo(t, dir)
	c, err := Parse(filepath.Join(dir, "c.yaml"), []byte(geoYAML))
	if err != nil {
		t.Fatal(err)
	}
	if c.GeoIP.ReloadInterval.String() != "1m0s" {
		t.Fatalf("reload_interval %v", c.GeoIP.ReloadInterval)
	}
	rc, err := c.EngineConfig()
	if err != nil || rc.Geo == nil {
		t.Fatalf("engine config: %v, geo %v", err, rc.Geo)
	}
	if got := rc.Geo.Country(netip.MustParseAddr("192.0.2.9")); got != "DE" {
		t.Fatalf("country %q", got)
	}
	if got := rc.Geo.ASN(netip.MustParseAddr("198.51.100.9")); got != 64501 {
		t.Fatalf("asn %d", got)
	}
	var b bytes.Buffer
	c.Describe(&b)
	for _, want := range []string{
		"geoip    country and asn from " + filepath.Join(dir, "geo.mmdb") + " (tollgate-test, built ",
		"checked for a new version every 1m0s",
		"key    country (of the client IP; XX when the database has none)",
		"match  client country DE, client network AS64500",
		"key    asn (of the client IP; 0 when the database has none)+ja4 (TLS fingerprint; requests without TLS are not counted)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("describe lacks %q:\n%s", want, b.String())
		}
	}
}

// Each problem is at its line: a rule using country without the
// section, a missing or invalid database, a bad interval.
func TestGeoIPProblemsAtTheirLines(t *testing.T) {
	countProblems := func(err error) int { return strings.Count(err.Error(), "\n") + 1 }
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	check := func(yaml string, want ...string) {
		t.Helper()
		_, err := Parse(path, []byte(yaml))
		if err == nil {
			t.Fatalf("valid:\n%s", yaml)
		}
		if countProblems(err) != len(want) {
			t.Errorf("%d problems, want %d:\n%v", countProblems(err), len(want), err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("no %q in:\n%v", w, err)
			}
		}
	}
	noSection := "routes: [{path: /, upstream: demo}]\nrules:\n  - name: a\n    key: [ip, country]\n    policies: [{rate: 1/s}]\n  - name: b\n    match:\n      asns: [1]\n    policies: [{rate: 1/s}]\n"
	check(noSection,
		path+":4:15: rules[0].key[1]: the country key part needs a country database",
		path+":8:7: rules[1].match.asns: matching by asn needs an ASN database")

	onlyCountry := strings.Replace(geoYAML, "  asn: geo.mmdb\n", "", 1)
	writeGeo(t, dir)
	check(onlyCountry, path+":9:13: rules[1].match.asns: matching by asn needs an ASN database", path+":10:11: rules[1].key[0]: the asn key part")

	check(strings.Replace(geoYAML, "country: geo.mmdb", "country: missing.mmdb", 1),
		path+":3:3: geoip.country: geoip: open "+filepath.Join(dir, "missing.mmdb"))
	if err := os.WriteFile(filepath.Join(dir, "bad.mmdb"), []byte("not a database"), 0o644); err != nil {
		t.Fatal(err)
	}
	check(strings.Replace(geoYAML, "asn: geo.mmdb", "asn: bad.mmdb", 1),
		path+":4:3: geoip.asn: geoip: "+filepath.Join(dir, "bad.mmdb")+": not a valid MaxMind database")
	check("routes: [{path: /, upstream: demo}]\ngeoip:\n  reload_interval: 10ms\n",
		path+":2:1: geoip: set country", path+":3:3: geoip.reload_interval 10ms must be at least 1s")
	check(strings.Replace(geoYAML, "countries: [de]", "countries: [DEU]", 1),
		path+`:10:40: rules[1].match.countries[0]: "DEU" is not an ISO 3166-1 alpha-2 country code`)
}

func TestASNsDecodeAsUnsigned(t *testing.T) {
	dir := t.TempDir()
	writeGeo(t, dir)
	path := filepath.Join(dir, "c.yaml")
	for _, tc := range []struct{ asns, want string }{
		{"[-1]", "rules[1].match.asns[0]: -1 must not be negative"},
		{"[4294967296]", "rules[1].match.asns[0]: 4294967296 is too large (the largest is 4294967295)"},
		{"[AS64500]", "rules[1].match.asns[0]: want a whole number from 0"},
	} {
		_, err := Parse(path, []byte(strings.Replace(geoYAML, "asns: [64500]", "asns: "+tc.asns, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("asns %s: %v", tc.asns, err)
		}
	}
	c, err := Parse(path, []byte(strings.Replace(geoYAML, "asns: [64500]", "asns: [4294967295, 0x10]", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Rules[1].Match.ASNs; len(got) != 2 || got[0] != 4294967295 || got[1] != 16 {
		t.Fatalf("asns %v", got)
	}
}
