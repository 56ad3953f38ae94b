package geoip

import (
	"net/netip"
	"testing"

	"github.com/tollgate-dev/tollgate/rules"
)

// Geo is the rule engine's view of a country and an ASN database: a real
// engine keyed and matched by both, over GeoLite2-shaped test databases.
func TestGeoAnswersTheRuleEngine(t *testing.T) {
	cdb, err := OpenBytes(build(t, dbOptions{dbType: "GeoLite2-Country"}, countryNets()...))
	if err != nil {
		t.Fatal(err)
	}
	adb, err := OpenBytes(build(t, dbOptions{dbType: "GeoLite2-ASN"}, asnNets()...))
	if err != nil {
		t.Fatal(err)
	}
	g := &Geo{Countries: cdb, ASNs: adb}
	var _ rules.Geo = g
	var _ rules.GeoCoverage = g
	for _, tc := range []struct {
		ip      string
		country string
		asn     uint32
	}{
		{"81.2.69.160", "GB", 0},
		{"2a02:cf40::1", "NO", 4200000001},
		{"3.1.2.3", "", 16509},
		{"::ffff:89.160.20.112", "SE", 0},
	} {
		a := netip.MustParseAddr(tc.ip)
		if c, n := g.Country(a), g.ASN(a); c != tc.country || n != tc.asn {
			t.Errorf("%s: %q AS%d, want %q AS%d", tc.ip, c, n, tc.country, tc.asn)
		}
	}
	a := netip.MustParseAddr("2a02:cf40::1")
	if n := testing.AllocsPerRun(1000, func() { _, _ = g.Country(a), g.ASN(a) }); n != 0 {
		t.Fatalf("%v allocs per lookup pair", n)
	}
	if !g.HasCountry() || !g.HasASN() || (&Geo{Countries: cdb}).HasASN() {
		t.Fatal("coverage")
	}
	if (&Geo{}).Country(a) != "" || (&Geo{}).ASN(a) != 0 {
		t.Fatal("an empty Geo answers")
	}
	if err := (&rules.Config{Geo: &Geo{Countries: cdb}, Rules: []rules.Rule{{Name: "a", Key: rules.Key{"asn"}, Policies: []rules.Policy{{Rate: "1/s"}}}}}).Validate(); err == nil {
		t.Fatal("an asn key over a country database only: valid")
	}
}

// BenchmarkGeoCountry is one country lookup through Geo.
func BenchmarkGeoCountry(b *testing.B) {
	cdb, err := OpenBytes(build(b, dbOptions{dbType: "GeoLite2-Country"}, countryNets()...))
	if err != nil {
		b.Fatal(err)
	}
	g := &Geo{Countries: cdb}
	a := netip.MustParseAddr("89.160.20.112")
	b.ReportAllocs()
	for b.Loop() {
		_ = g.Country(a)
	}
}
