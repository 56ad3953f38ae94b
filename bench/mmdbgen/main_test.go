package main

import (
	"net/netip"
	"testing"

	"github.com/tollgate-dev/tollgate/geoip"
	"github.com/tollgate-dev/tollgate/internal/geoiptest"
)

// BenchmarkLookup is one country lookup of the client's /32 in the
// database ../scripts/bench-rules.sh serves (100,000 networks besides
// the client's): the cost BENCHMARKS.md's "country" row adds per request.
func BenchmarkLookup(b *testing.B) {
	client := netip.MustParseAddr("127.0.0.1")
	data, err := geoiptest.Build(networks(100000, client, "DE")...)
	if err != nil {
		b.Fatal(err)
	}
	db, err := geoip.OpenBytes(data)
	if err != nil {
		b.Fatal(err)
	}
	if r := db.Lookup(client); r.Country != "DE" {
		b.Fatalf("Lookup(%s) = %+v, want country DE", client, r)
	}
	b.ReportAllocs()
	for b.Loop() {
		db.Lookup(client)
	}
}
