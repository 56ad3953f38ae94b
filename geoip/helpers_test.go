package geoip

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// network is one network of a test database and its record.
type network struct {
	cidr   string
	record mmdbtype.DataType
}

// dbOptions are how a test database is built.
type dbOptions struct {
	dbType     string
	ipVersion  int  // 4 or 6 (0: 6)
	noAliases  bool // no ::ffff:0:0/96 alias of the IPv4 tree
	recordSize int  // 0: 28
}

// build writes a MaxMind DB holding nets with mmdbwriter.
func build(t testing.TB, o dbOptions, nets ...network) []byte {
	t.Helper()
	if o.recordSize == 0 {
		o.recordSize = 28
	}
	tree, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType:            o.dbType,
		IPVersion:               o.ipVersion,
		RecordSize:              o.recordSize,
		DisableIPv4Aliasing:     o.noAliases,
		IncludeReservedNetworks: true,
		Languages:               []string{"en", "de"},
		Description:             map[string]string{"en": "tollgate geoip test database"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nets {
		_, ipnet, err := net.ParseCIDR(n.cidr)
		if err != nil {
			t.Fatal(err)
		}
		if err := tree.Insert(ipnet, n.record); err != nil {
			t.Fatalf("insert %s: %v", n.cidr, err)
		}
	}
	var buf bytes.Buffer
	if _, err := tree.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// place is a country's record fragment as GeoLite2 writes it.
func place(iso string, geonameID uint32, en, de string, eu bool) mmdbtype.Map {
	m := mmdbtype.Map{
		"geoname_id": mmdbtype.Uint32(geonameID),
		"iso_code":   mmdbtype.String(iso),
		"names":      mmdbtype.Map{"en": mmdbtype.String(en), "de": mmdbtype.String(de)},
	}
	if eu {
		m["is_in_european_union"] = mmdbtype.Bool(true)
	}
	return m
}

func continent(code string, geonameID uint32, en string) mmdbtype.Map {
	return mmdbtype.Map{
		"code":       mmdbtype.String(code),
		"geoname_id": mmdbtype.Uint32(geonameID),
		"names":      mmdbtype.Map{"en": mmdbtype.String(en), "de": mmdbtype.String(en)},
	}
}

// countryRecord is a GeoLite2-Country record: continent, country and
// registered_country.
func countryRecord(iso string, geonameID uint32, en string, cont mmdbtype.Map, eu bool) mmdbtype.Map {
	return mmdbtype.Map{
		"continent":          cont,
		"country":            place(iso, geonameID, en, en, eu),
		"registered_country": place(iso, geonameID, en, en, eu),
	}
}

var (
	europe       = continent("EU", 6255148, "Europe")
	northAmerica = continent("NA", 6255149, "North America")
	asia         = continent("AS", 6255147, "Asia")
)

// countryNets are the networks of the test Country database.
func countryNets() []network {
	return []network{
		{"81.2.69.0/24", countryRecord("GB", 2635167, "United Kingdom", europe, false)},
		{"89.160.0.0/16", countryRecord("SE", 2661886, "Sweden", europe, true)},
		{"216.160.83.0/24", countryRecord("US", 6252001, "United States", northAmerica, false)},
		{"2a02:cf40::/29", countryRecord("NO", 3144096, "Norway", europe, false)},
		{"2001:218::/32", countryRecord("JP", 1861060, "Japan", asia, false)},
		// A network placed in no country: only registered_country (as
		// GeoLite2 has for some anycast ranges).
		{"192.0.2.0/24", mmdbtype.Map{"continent": europe, "registered_country": place("FR", 3017382, "France", "Frankreich", true)}},
		// Country codes that are not two upper-case letters.
		{"198.51.100.0/25", countryRecord("gb", 2635167, "lower case", europe, false)},
		{"198.51.100.128/25", countryRecord("GBR", 2635167, "three letters", europe, false)},
		{"203.0.113.0/24", mmdbtype.Map{"country": mmdbtype.Map{"iso_code": mmdbtype.Uint32(44)}}},
	}
}

// asnRecord is a GeoLite2-ASN record.
func asnRecord(n uint32, org string) mmdbtype.Map {
	return mmdbtype.Map{
		"autonomous_system_number":       mmdbtype.Uint32(n),
		"autonomous_system_organization": mmdbtype.String(org),
	}
}

func asnNets() []network {
	return []network{
		{"1.128.0.0/11", asnRecord(1221, "Telstra Pty Ltd")},
		{"12.81.92.0/22", asnRecord(7018, "AT&T Services")},
		{"3.0.0.0/9", asnRecord(16509, "AMAZON-02")},
		{"2600:1f00::/24", asnRecord(16509, "AMAZON-02")},
		{"2a02:cf40::/29", asnRecord(4200000001, "a 32-bit private ASN")},
	}
}

// writeFile writes data beside path and renames it over path, as
// geoipupdate replaces a database.
func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
