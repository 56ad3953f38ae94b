package geoip

import (
	"context"
	"net/netip"
	"testing"

	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
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

// peer is a rules.Request from an address.
type peer netip.AddrPort

func (peer) Method() string               { return "GET" }
func (peer) Host() string                 { return "api.example.com" }
func (peer) Path() string                 { return "/items/1" }
func (peer) Query(string) (string, bool)  { return "", false }
func (peer) Header(string) (string, bool) { return "", false }
func (p peer) RemoteAddr() netip.AddrPort { return netip.AddrPort(p) }

// engineFor is an engine of one rule keyed by key over the test Country
// and ASN databases.
func engineFor(tb testing.TB, key rules.Key) *rules.Engine {
	cdb, err := OpenBytes(build(tb, dbOptions{dbType: "GeoLite2-Country"}, countryNets()...))
	if err != nil {
		tb.Fatal(err)
	}
	adb, err := OpenBytes(build(tb, dbOptions{dbType: "GeoLite2-ASN"}, asnNets()...))
	if err != nil {
		tb.Fatal(err)
	}
	st, err := memory.New(memory.Config{SweepInterval: -1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	e, err := rules.New(rules.Config{Geo: &Geo{Countries: cdb, ASNs: adb}, Rules: []rules.Rule{{
		Name: "r", Key: key, Policies: []rules.Policy{{Rate: "1000000000/s"}},
	}}}, st)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// sweden is a pointer, so that passing it as a rules.Request does not
// allocate.
var sweden = func() *peer { p := peer(netip.MustParseAddrPort("89.160.20.112:1234")); return &p }()

// An allowed request keyed by country over a real database allocates
// nothing, as one keyed by IP does.
func TestDecideByCountryAllocatesNothing(t *testing.T) {
	for _, key := range []rules.Key{{"country"}, {"country", "asn"}, {"ip"}} {
		e := engineFor(t, key)
		ctx := context.Background()
		e.Decide(ctx, sweden)
		n := testing.AllocsPerRun(1000, func() {
			if res, err := e.Decide(ctx, sweden); err != nil || res.Outcome != rules.Allowed {
				t.Fatal(res.Outcome, err)
			}
		})
		if n != 0 {
			t.Errorf("key %v: %v allocs per allowed request", key, n)
		}
	}
}

// BenchmarkDecide{IP,Country}GeoIP compare the engine's allowed path keyed
// by IP and by country over a real (test) GeoLite2-Country database.
func BenchmarkDecideIPGeoIP(b *testing.B)      { benchDecide(b, rules.Key{"ip"}) }
func BenchmarkDecideCountryGeoIP(b *testing.B) { benchDecide(b, rules.Key{"country"}) }

func benchDecide(b *testing.B, key rules.Key) {
	e := engineFor(b, key)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if res, _ := e.Decide(ctx, sweden); res.Outcome != rules.Allowed {
			b.Fatal(res.Outcome)
		}
	}
}
