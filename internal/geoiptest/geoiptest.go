// Package geoiptest writes small MaxMind-format databases (with
// maxmind/mmdbwriter) for tests and benchmark scripts: tollgate ships no
// GeoLite2 data (MaxMind's licence forbids redistributing it), so every
// test builds the database it needs. Its command mkmmdb writes one from
// the command line:
//
//	go run ./internal/geoiptest/mkmmdb -o geo.mmdb 127.0.0.0/8=DE:64496 ::1/128=US
package geoiptest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// Network is one network of a test database: its country code and AS
// number (either may be empty or zero: not written).
type Network struct {
	CIDR    string
	Country string
	ASN     uint32
	Org     string
}

// ParseNetwork reads "CIDR=CC[:ASN]" or "CIDR=:ASN" (mkmmdb's argument).
func ParseNetwork(s string) (Network, error) {
	cidr, rest, ok := strings.Cut(s, "=")
	if !ok {
		return Network{}, fmt.Errorf("%q: want CIDR=CC[:ASN]", s)
	}
	cc, asn, _ := strings.Cut(rest, ":")
	n := Network{CIDR: cidr, Country: cc}
	if asn != "" {
		v, err := strconv.ParseUint(asn, 10, 32)
		if err != nil {
			return Network{}, fmt.Errorf("%q: ASN: %w", s, err)
		}
		n.ASN = uint32(v)
	}
	return n, nil
}

// Build returns a database (IPv6 tree, IPv4 aliased, as MaxMind's) whose
// records carry country.iso_code and autonomous_system_number as the
// GeoIP2 Country and ASN databases do, so one file serves as both.
func Build(nets ...Network) ([]byte, error) {
	tree, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType:            "tollgate-test",
		RecordSize:              28,
		IncludeReservedNetworks: true,
		Description:             map[string]string{"en": "tollgate test database"},
	})
	if err != nil {
		return nil, err
	}
	for _, n := range nets {
		_, ipnet, err := net.ParseCIDR(n.CIDR)
		if err != nil {
			return nil, err
		}
		rec := mmdbtype.Map{}
		if n.Country != "" {
			rec["country"] = mmdbtype.Map{"iso_code": mmdbtype.String(n.Country)}
		}
		if n.ASN != 0 {
			rec["autonomous_system_number"] = mmdbtype.Uint32(n.ASN)
		}
		if n.Org != "" {
			rec["autonomous_system_organization"] = mmdbtype.String(n.Org)
		}
		if err := tree.Insert(ipnet, rec); err != nil {
			return nil, fmt.Errorf("%s: %w", n.CIDR, err)
		}
	}
	var buf bytes.Buffer
	if _, err := tree.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteFile builds the database and renames it over path (as geoipupdate
// replaces a file), so that a reader never sees it half written.
func WriteFile(path string, nets ...Network) error {
	data, err := Build(nets...)
	if err != nil {
		return err
	}
	return Replace(path, data)
}

// Replace writes data beside path and renames it over path.
func Replace(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mmdb-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
