package geoip

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/stableread"
)

// A database file larger than MaxDatabaseBytes is refused without being
// read (the file is sparse: os.Truncate makes it big cheaply): at Open,
// and on reload, where the database in use keeps answering.
func TestDatabaseLargerThanItsBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "GeoLite2-Country.mmdb")
	gb := []network{{"81.2.69.0/24", countryRecord("GB", 2635167, "United Kingdom", europe, false)}}
	writeFile(t, path, build(t, dbOptions{dbType: "GeoLite2-Country"}, gb...))
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, MaxDatabaseBytes+1); err != nil {
		t.Fatal(err)
	}
	if tried, err := db.Poll(); !tried || !errors.Is(err, stableread.ErrTooLarge) || !strings.Contains(err.Error(), "256 MiB") {
		t.Fatalf("Poll of a database over its bound: %v, %v; want ErrTooLarge naming 256 MiB", tried, err)
	}
	if got := db.Lookup(netip.MustParseAddr("81.2.69.142")).Country; got != "GB" {
		t.Errorf("after the refused reload: country %q, want GB (the database before)", got)
	}
	if s := db.Stats(); s.ReloadErrors != 1 {
		t.Errorf("stats %+v, want 1 reload error", s)
	}
	if _, err := Open(path); !errors.Is(err, stableread.ErrTooLarge) {
		t.Errorf("Open of a database over its bound: %v", err)
	}
}
