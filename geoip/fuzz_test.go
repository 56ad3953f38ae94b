package geoip

import (
	"net/netip"
	"testing"
)

// FuzzOpenBytes opens arbitrary bytes as a database: an error or a
// database whose lookups answer, never a panic.
func FuzzOpenBytes(f *testing.F) {
	country := build(f, dbOptions{dbType: "GeoLite2-Country"}, countryNets()...)
	asn := build(f, dbOptions{dbType: "GeoLite2-ASN", recordSize: 24}, asnNets()...)
	f.Add(country)
	f.Add(asn)
	f.Add(country[:len(country)/2])
	f.Add(asn[len(asn)/3:])
	f.Add([]byte("\xab\xcd\xefMaxMind.com"))
	f.Add([]byte{})
	addrs := []netip.Addr{
		netip.MustParseAddr("81.2.69.142"),
		netip.MustParseAddr("::ffff:3.5.140.2"),
		netip.MustParseAddr("2a02:cf40::1"),
		netip.MustParseAddr("::"),
		netip.MustParseAddr("255.255.255.255"),
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		db, err := OpenBytes(data)
		if err != nil {
			return
		}
		for _, a := range addrs {
			r := db.Lookup(a)
			if r.Country != "" && len(r.Country) != 2 {
				t.Fatalf("country %q", r.Country)
			}
			_ = db.Organization(a)
		}
	})
}
