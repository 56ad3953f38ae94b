package geoip

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/maxmind/mmdbwriter/mmdbtype"
)

func openBytes(t testing.TB, data []byte) *DB {
	t.Helper()
	db, err := OpenBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestCountry(t *testing.T) {
	for _, o := range []dbOptions{
		{dbType: "GeoLite2-Country"},
		{dbType: "GeoIP2-Country", recordSize: 24},
		{dbType: "GeoLite2-Country", recordSize: 32, noAliases: true},
	} {
		db := openBytes(t, build(t, o, countryNets()...))
		for _, c := range []struct{ addr, want string }{
			{"81.2.69.142", "GB"},
			{"89.160.20.112", "SE"},
			{"216.160.83.56", "US"},
			{"2a02:cf40::1", "NO"},
			{"2001:218:1:2::3", "JP"},
			{"::ffff:81.2.69.142", "GB"}, // IPv4-mapped: as the IPv4 address
			{"::ffff:216.160.83.56", "US"},
			{"fe80::1%eth0", ""},
			{"2001:218::1%eth0", "JP"},
			{"8.8.8.8", ""},         // in no network
			{"2001:4860::8888", ""}, // in no network
			{"192.0.2.1", ""},       // registered_country only
			{"198.51.100.1", ""},    // lower case
			{"198.51.100.200", ""},  // three letters
			{"203.0.113.9", ""},     // not a string
			{"::ffff:8.8.8.8", ""},  // mapped, in no network
			{"0.0.0.0", ""},
		} {
			got := db.Lookup(netip.MustParseAddr(c.addr))
			if got.Country != c.want || got.ASN != 0 {
				t.Errorf("%+v: Lookup(%s) = %+v, want country %q", o, c.addr, got, c.want)
			}
		}
		if got := db.Lookup(netip.Addr{}); got != (Record{}) {
			t.Errorf("Lookup(zero Addr) = %+v", got)
		}
		if s := db.Stats(); s.LookupErrors != 0 {
			t.Errorf("%+v: %d lookup errors", o, s.LookupErrors)
		}
		if db.Metadata().DatabaseType != o.dbType {
			t.Errorf("database type %q", db.Metadata().DatabaseType)
		}
	}
}

// An IPv4-only database answers IPv4-mapped IPv6 addresses as well.
func TestCountryIPv4Database(t *testing.T) {
	nets := []network{{"81.2.69.0/24", countryRecord("GB", 2635167, "United Kingdom", europe, false)}}
	db := openBytes(t, build(t, dbOptions{dbType: "GeoLite2-Country", ipVersion: 4}, nets...))
	for _, a := range []string{"81.2.69.1", "::ffff:81.2.69.1"} {
		if got := db.Lookup(netip.MustParseAddr(a)).Country; got != "GB" {
			t.Errorf("Lookup(%s).Country = %q, want GB", a, got)
		}
	}
	if got := db.Lookup(netip.MustParseAddr("2a02:cf40::1")); got != (Record{}) {
		t.Errorf("IPv6 in an IPv4 database: %+v", got)
	}
}

func TestASN(t *testing.T) {
	db := openBytes(t, build(t, dbOptions{dbType: "GeoLite2-ASN", recordSize: 24}, asnNets()...))
	for _, c := range []struct {
		addr string
		asn  uint32
		org  string
	}{
		{"1.128.0.1", 1221, "Telstra Pty Ltd"},
		{"12.81.92.200", 7018, "AT&T Services"},
		{"3.5.140.2", 16509, "AMAZON-02"},
		{"::ffff:3.5.140.2", 16509, "AMAZON-02"},
		{"2600:1f00:1::1", 16509, "AMAZON-02"},
		{"2a02:cf40::1", 4200000001, "a 32-bit private ASN"},
		{"9.9.9.9", 0, ""},
		{"2001:db8::1", 0, ""},
	} {
		a := netip.MustParseAddr(c.addr)
		if got := db.Lookup(a); got.ASN != c.asn || got.Country != "" {
			t.Errorf("Lookup(%s) = %+v, want ASN %d", c.addr, got, c.asn)
		}
		if got := db.Organization(a); got != c.org {
			t.Errorf("Organization(%s) = %q, want %q", c.addr, got, c.org)
		}
	}
}

// A record holding both (a City-style database with ASN fields, as
// GeoIP2-Enterprise has them) answers both.
func TestCountryAndASNInOneRecord(t *testing.T) {
	rec := countryRecord("DE", 2921044, "Germany", europe, true)
	rec["city"] = mmdbtype.Map{"geoname_id": mmdbtype.Uint32(2950159), "names": mmdbtype.Map{"en": mmdbtype.String("Berlin")}}
	rec["subdivisions"] = mmdbtype.Slice{mmdbtype.Map{"iso_code": mmdbtype.String("BE")}}
	rec["location"] = mmdbtype.Map{"latitude": mmdbtype.Float64(52.5), "longitude": mmdbtype.Float64(13.4)}
	rec["autonomous_system_number"] = mmdbtype.Uint32(3320)
	rec["autonomous_system_organization"] = mmdbtype.String("Deutsche Telekom AG")
	db := openBytes(t, build(t, dbOptions{dbType: "GeoIP2-Enterprise"}, network{"80.128.0.0/11", rec}))
	a := netip.MustParseAddr("80.130.1.1")
	if got := db.Lookup(a); got != (Record{Country: "DE", ASN: 3320}) {
		t.Errorf("Lookup = %+v", got)
	}
	if got := db.Organization(a); got != "Deutsche Telekom AG" {
		t.Errorf("Organization = %q", got)
	}
}

// A record that is not what the fields should be (an ASN that is a
// string, a country that is a number) answers nothing for that field
// and counts a lookup error, never fails.
func TestMistypedRecord(t *testing.T) {
	db := openBytes(t, build(t, dbOptions{dbType: "GeoLite2-ASN"},
		network{"10.0.0.0/8", mmdbtype.Map{"autonomous_system_number": mmdbtype.String("AS1")}},
		network{"11.0.0.0/8", mmdbtype.Map{"country": mmdbtype.String("GB")}},
		network{"12.0.0.0/8", mmdbtype.Map{"autonomous_system_number": mmdbtype.Uint64(1 << 40)}},
		network{"13.0.0.0/8", mmdbtype.String("not a map")},
	))
	for _, a := range []string{"10.1.1.1", "11.1.1.1", "12.1.1.1", "13.1.1.1"} {
		if got := db.Lookup(netip.MustParseAddr(a)); got != (Record{}) {
			t.Errorf("Lookup(%s) = %+v, want the zero Record", a, got)
		}
	}
	if s := db.Stats(); s.LookupErrors != 3 { // 12.1.1.1 decodes: the ASN is out of range
		t.Errorf("%d lookup errors, want 3", s.LookupErrors)
	}
}

func TestLookupAllocatesNothing(t *testing.T) {
	country := openBytes(t, build(t, dbOptions{dbType: "GeoLite2-Country"}, countryNets()...))
	asn := openBytes(t, build(t, dbOptions{dbType: "GeoLite2-ASN"}, asnNets()...))
	for _, c := range []struct {
		db   *DB
		addr string
	}{
		{country, "81.2.69.142"},
		{country, "::ffff:89.160.20.112"},
		{country, "2001:218:1:2::3"},
		{country, "8.8.8.8"},
		{asn, "3.5.140.2"},
		{asn, "2a02:cf40::1"},
		{asn, "9.9.9.9"},
	} {
		a := netip.MustParseAddr(c.addr)
		var r Record
		if n := testing.AllocsPerRun(1000, func() { r = c.db.Lookup(a) }); n != 0 {
			t.Errorf("Lookup(%s) = %+v: %v allocations, want 0", c.addr, r, n)
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	for _, c := range []struct {
		name string
		data []byte
		addr string
	}{
		{"country", build(b, dbOptions{dbType: "GeoLite2-Country"}, countryNets()...), "89.160.20.112"},
		{"country-miss", build(b, dbOptions{dbType: "GeoLite2-Country"}, countryNets()...), "8.8.8.8"},
		{"asn", build(b, dbOptions{dbType: "GeoLite2-ASN"}, asnNets()...), "2600:1f00:1::1"},
	} {
		db := openBytes(b, c.data)
		a := netip.MustParseAddr(c.addr)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				db.Lookup(a)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing.mmdb")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.mmdb")
	writeFile(t, bad, []byte("this is no database"))
	if _, err := Open(bad); err == nil || !strings.Contains(err.Error(), "not a valid MaxMind database") {
		t.Errorf("bad file: %v", err)
	}
	good := build(t, dbOptions{dbType: "GeoLite2-Country"}, countryNets()...)
	for _, n := range []int{0, 1, len(good) / 2, len(good) - 1} {
		if _, err := OpenBytes(good[:n]); err == nil {
			t.Errorf("OpenBytes of the first %d of %d bytes: no error", n, len(good))
		}
	}
	db := openBytes(t, good)
	if err := db.Reload(); err == nil {
		t.Error("Reload of a database from memory: no error")
	}
}

// Reloading: a new version of the file changes the answers; a corrupt
// one keeps the old answers, is counted and is DB.Err, and is not tried
// again until the file changes.
func TestReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "GeoLite2-Country.mmdb")
	gb := []network{{"81.2.69.0/24", countryRecord("GB", 2635167, "United Kingdom", europe, false)}}
	ie := []network{{"81.2.69.0/24", countryRecord("IE", 2963597, "Ireland", europe, true)}}
	fr := []network{{"81.2.69.0/24", countryRecord("FR", 3017382, "France", europe, true)}}
	addr := netip.MustParseAddr("81.2.69.142")
	writeFile(t, path, build(t, dbOptions{dbType: "GeoLite2-Country"}, gb...))
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	country := func() string { return db.Lookup(addr).Country }
	if got := country(); got != "GB" {
		t.Fatalf("country %q, want GB", got)
	}
	if tried, err := db.Poll(); tried || err != nil {
		t.Fatalf("Poll of an unchanged file: %v, %v", tried, err)
	}

	writeFile(t, path, build(t, dbOptions{dbType: "GeoLite2-Country"}, ie...))
	if tried, err := db.Poll(); !tried || err != nil {
		t.Fatalf("Poll after a new version: %v, %v", tried, err)
	}
	if got := country(); got != "IE" {
		t.Fatalf("after the reload: country %q, want IE", got)
	}

	writeFile(t, path, []byte("corrupt: no metadata marker"))
	if tried, err := db.Poll(); !tried || err == nil {
		t.Fatalf("Poll after a corrupt version: %v, %v", tried, err)
	}
	if got := country(); got != "IE" {
		t.Fatalf("after a corrupt file: country %q, want IE (the old database)", got)
	}
	if s := db.Stats(); s.Reloads != 1 || s.ReloadErrors != 1 {
		t.Fatalf("stats %+v, want 1 reload and 1 error", s)
	}
	if err := db.Err(); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Err() = %v, want the refusal naming the file", err)
	}
	if tried, _ := db.Poll(); tried {
		t.Fatal("the same corrupt version was tried again")
	}

	// A truncated copy of a good database (a download cut short) is refused too.
	good := build(t, dbOptions{dbType: "GeoLite2-Country"}, fr...)
	writeFile(t, path, good[:len(good)-20])
	if tried, err := db.Poll(); !tried || err == nil {
		t.Fatalf("Poll after a truncated version: %v, %v", tried, err)
	}
	if got := country(); got != "IE" {
		t.Fatalf("after a truncated file: country %q, want IE", got)
	}

	// A good version, renamed over the refused one.
	writeFile(t, path, good)
	if tried, err := db.Poll(); !tried || err != nil {
		t.Fatalf("Poll after a good version: %v, %v", tried, err)
	}
	if got := country(); got != "FR" {
		t.Fatalf("country %q, want FR", got)
	}
	if err := db.Err(); err != nil {
		t.Fatalf("Err() = %v after a good version", err)
	}
	if s := db.Stats(); s.Reloads != 2 || s.ReloadErrors != 2 {
		t.Fatalf("stats %+v, want 2 reloads and 2 errors", s)
	}

	// Reload reads the file even when it looks unchanged.
	if err := db.Reload(); err != nil {
		t.Fatal(err)
	}
	if s := db.Stats(); s.Reloads != 3 {
		t.Fatalf("stats %+v after Reload", s)
	}
}

// A file replaced by one of the same size and modification time (but a
// new inode) is a new version.
func TestPollSeesNewInode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "GeoLite2-ASN.mmdb")
	a := build(t, dbOptions{dbType: "GeoLite2-ASN"}, network{"3.0.0.0/9", asnRecord(16509, "AMAZON-02")})
	b := build(t, dbOptions{dbType: "GeoLite2-ASN"}, network{"3.0.0.0/9", asnRecord(16510, "AMAZON-02")})
	if len(a) != len(b) {
		t.Fatalf("the two databases differ in size: %d, %d", len(a), len(b))
	}
	writeFile(t, path, a)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, b)
	if err := os.Chtimes(path, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if tried, err := db.Poll(); !tried || err != nil {
		t.Fatalf("Poll: %v, %v", tried, err)
	}
	if got := db.Lookup(netip.MustParseAddr("3.1.1.1")).ASN; got != 16510 {
		t.Fatalf("ASN %d, want 16510", got)
	}
}

// Lookups running while the file is reloaded (good and bad versions)
// each see one whole database: an answer is always one of the
// versions', never a failure (run with -race).
func TestLookupDuringReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "GeoLite2-Country.mmdb")
	versions := [][]byte{
		build(t, dbOptions{dbType: "GeoLite2-Country"}, network{"81.2.69.0/24", countryRecord("GB", 2635167, "United Kingdom", europe, false)}),
		build(t, dbOptions{dbType: "GeoLite2-Country", recordSize: 24}, network{"81.2.69.0/24", countryRecord("IE", 2963597, "Ireland", europe, true)}),
		[]byte("corrupt"),
	}
	writeFile(t, path, versions[0])
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.MustParseAddr("::ffff:81.2.69.142")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	bad := make(chan string, 4)
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if c := db.Lookup(addr).Country; c != "GB" && c != "IE" {
					select {
					case bad <- c:
					default:
					}
					return
				}
			}
		})
	}
	for i := range 60 {
		writeFile(t, path, versions[i%3])
		_ = db.Reload()
	}
	close(stop)
	wg.Wait()
	close(bad)
	for c := range bad {
		t.Errorf("a lookup during reloads answered %q", c)
	}
	if s := db.Stats(); s.Reloads != 40 || s.ReloadErrors != 20 || s.LookupErrors != 0 {
		t.Errorf("stats %+v, want 40 reloads, 20 errors, no lookup error", s)
	}
}

// Watch polls until stopped.
func TestWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "GeoLite2-ASN.mmdb")
	writeFile(t, path, build(t, dbOptions{dbType: "GeoLite2-ASN"}, network{"3.0.0.0/9", asnRecord(16509, "AMAZON-02")}))
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	reloaded := make(chan error, 1)
	go func() {
		defer close(done)
		db.Watch(1e6, stop, func(err error) { reloaded <- err })
	}()
	writeFile(t, path, build(t, dbOptions{dbType: "GeoLite2-ASN"}, network{"3.0.0.0/9", asnRecord(64512, "private")}))
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	close(stop)
	<-done
	if got := db.Lookup(netip.MustParseAddr("3.1.1.1")).ASN; got != 64512 {
		t.Fatalf("ASN %d after the watcher's reload, want 64512", got)
	}
}
