// Command mmdbgen writes a GeoLite2-Country-shaped MaxMind DB for
// ../scripts/bench-rules.sh: -n deterministic networks (IPv4 prefixes of
// /16 to /24 outside 127.0.0.0/8, each given one of a few countries, as a
// real database's many networks make the lookup walk a deep tree), plus
// the -client address as a /32 (a leaf at the tree's full IPv4 depth, the
// longest walk) in -country. mmdbwriter is MaxMind's own writer.
//
//	cd bench && go run ./mmdbgen -o /tmp/country.mmdb
package main

import (
	"flag"
	"fmt"
	"net"
	"os"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

func main() {
	out := flag.String("o", "country.mmdb", "the file to write")
	n := flag.Int("n", 100000, "how many networks besides the client's")
	client := flag.String("client", "127.0.0.1", "the client's address, written as a /32")
	country := flag.String("country", "DE", "the client's country")
	flag.Parse()
	if err := write(*out, *n, *client, *country); err != nil {
		fmt.Fprintln(os.Stderr, "mmdbgen:", err)
		os.Exit(1)
	}
}

func record(iso string) mmdbtype.Map {
	c := mmdbtype.Map{"iso_code": mmdbtype.String(iso), "names": mmdbtype.Map{"en": mmdbtype.String(iso)}}
	return mmdbtype.Map{"country": c, "registered_country": c}
}

func write(path string, n int, client, country string) error {
	tree, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType:            "GeoLite2-Country",
		RecordSize:              28,
		IncludeReservedNetworks: true,
		Description:             map[string]string{"en": "tollgate bench-rules.sh database"},
	})
	if err != nil {
		return err
	}
	countries := []string{"US", "GB", "FR", "JP", "BR", "IN", "SE", "NO"}
	x := uint64(26) // MINSTD: the same networks every run
	next := func() uint32 { x = x * 48271 % 2147483647; return uint32(x) }
	for i := 0; i < n; i++ {
		ip := next()<<1 ^ next()
		if ip>>24 == 127 || ip>>24 == 0 {
			ip ^= 1 << 30
		}
		bits := 16 + int(next()%9)
		ip &^= 1<<(32-bits) - 1
		ipnet := &net.IPNet{IP: net.IPv4(byte(ip>>24), byte(ip>>16), byte(ip>>8), byte(ip)).To4(), Mask: net.CIDRMask(bits, 32)}
		if err := tree.Insert(ipnet, record(countries[i%len(countries)])); err != nil {
			return fmt.Errorf("%s: %w", ipnet, err)
		}
	}
	ip := net.ParseIP(client)
	if ip == nil || ip.To4() == nil {
		return fmt.Errorf("-client %q is not an IPv4 address", client)
	}
	if err := tree.Insert(&net.IPNet{IP: ip.To4(), Mask: net.CIDRMask(32, 32)}, record(country)); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := tree.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
