package examples

import (
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/geoip"
	"github.com/tollgate-dev/tollgate/internal/geoiptest"
)

// The shipped database answers what per-country-api.yaml says it does.
func TestExampleGeoIPDatabase(t *testing.T) {
	db, err := geoip.Open("geoip-example.mmdb")
	if err != nil {
		t.Fatal(err)
	}
	for ip, want := range map[string]geoip.Record{
		"192.0.2.1":     {Country: "DE", ASN: 3320},
		"192.0.2.200":   {Country: "DE", ASN: 16509},
		"198.51.100.7":  {Country: "US", ASN: 16509},
		"203.0.113.9":   {Country: "FR", ASN: 3215},
		"2001:db8::1":   {Country: "JP", ASN: 2516},
		"93.184.216.34": {},
	} {
		if got := db.Lookup(netip.MustParseAddr(ip)); got != want {
			t.Errorf("%s: %+v, want %+v", ip, got, want)
		}
	}
}

// per-country-api.yaml served over a database placing loopback
// addresses (the example as shipped, beside a database written here):
// one country's clients share its budget, a cloud client has its own
// smaller one.
func TestPerCountryAPI(t *testing.T) {
	dir := t.TempDir()
	yaml, err := os.ReadFile("per-country-api.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "per-country-api.yaml")
	if err := os.WriteFile(file, yaml, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := geoiptest.WriteFile(filepath.Join(dir, "geoip-example.mmdb"),
		geoiptest.Network{CIDR: "127.0.0.0/8", Country: "DE", ASN: 3320},
		geoiptest.Network{CIDR: "127.0.9.0/24", Country: "US", ASN: 16509},
	); err != nil {
		t.Fatal(err)
	}
	base := serveExample(t, file)
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	}
	status := func(ip string) int {
		t.Helper()
		resp, err := from(ip).Get(base + "/api/items")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// The cloud client: a burst of 10, then refused; another DE client
	// is not.
	for i := range 10 {
		if got := status("127.0.9.1"); got != 200 {
			t.Fatalf("cloud request %d: %d", i+1, got)
		}
	}
	if got := status("127.0.9.1"); got != 429 {
		t.Fatalf("cloud request 11: %d", got)
	}
	if got := status("127.0.0.1"); got != 200 {
		t.Fatalf("a DE client: %d", got)
	}
}
