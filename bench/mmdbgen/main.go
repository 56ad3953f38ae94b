// Command mmdbgen writes a country database of a real one's size for
// ../scripts/bench-rules.sh: -n deterministic networks (IPv4 prefixes of
// /16 to /24 outside 127.0.0.0/8, each given one of a few countries, as a
// real database's many networks make the lookup walk a deep tree), plus
// the -client address as a /32 (a leaf at the tree's full IPv4 depth, the
// longest walk) in -country. The database is internal/geoiptest's (its
// mkmmdb takes networks as arguments, too few for this).
//
//	cd bench && go run ./mmdbgen -o /tmp/country.mmdb
package main

import (
	"flag"
	"fmt"
	"net/netip"
	"os"

	"github.com/tollgate-dev/tollgate/internal/geoiptest"
)

func main() {
	out := flag.String("o", "country.mmdb", "the file to write")
	n := flag.Int("n", 100000, "how many networks besides the client's")
	client := flag.String("client", "127.0.0.1", "the client's address, written as a /32")
	country := flag.String("country", "DE", "the client's country")
	flag.Parse()
	a, err := netip.ParseAddr(*client)
	if err != nil || !a.Is4() {
		fmt.Fprintf(os.Stderr, "mmdbgen: -client %q is not an IPv4 address\n", *client)
		os.Exit(2)
	}
	if err := geoiptest.WriteFile(*out, networks(*n, a, *country)...); err != nil {
		fmt.Fprintln(os.Stderr, "mmdbgen:", err)
		os.Exit(1)
	}
}

func networks(n int, client netip.Addr, country string) []geoiptest.Network {
	countries := []string{"US", "GB", "FR", "JP", "BR", "IN", "SE", "NO"}
	x := uint64(26) // MINSTD: the same networks every run
	next := func() uint32 { x = x * 48271 % 2147483647; return uint32(x) }
	nets := make([]geoiptest.Network, 0, n+1)
	for i := range n {
		ip := next()<<1 ^ next()
		if ip>>24 == 127 || ip>>24 == 0 {
			ip ^= 1 << 30
		}
		bits := 16 + int(next()%9)
		ip &^= 1<<(32-bits) - 1
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), bits)
		nets = append(nets, geoiptest.Network{CIDR: p.String(), Country: countries[i%len(countries)]})
	}
	// Last, so that no network written before covers it.
	return append(nets, geoiptest.Network{CIDR: netip.PrefixFrom(client, 32).String(), Country: country})
}
