// Command mkmmdb writes a small MaxMind-format database for tests and
// benchmark scripts (package geoiptest):
//
//	go run ./internal/geoiptest/mkmmdb -o geo.mmdb 127.0.0.0/8=DE:64496 10.0.0.0/8=:16509
//
// Each argument is CIDR=CC[:ASN]; the one file answers both geoip.country
// and geoip.asn.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/tollgate-dev/tollgate/internal/geoiptest"
)

func main() {
	out := flag.String("o", "", "the database file to write (replaced by rename)")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: mkmmdb -o FILE CIDR=CC[:ASN]...")
		os.Exit(2)
	}
	var nets []geoiptest.Network
	for _, a := range flag.Args() {
		n, err := geoiptest.ParseNetwork(a)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mkmmdb:", err)
			os.Exit(2)
		}
		nets = append(nets, n)
	}
	if err := geoiptest.WriteFile(*out, nets...); err != nil {
		fmt.Fprintln(os.Stderr, "mkmmdb:", err)
		os.Exit(1)
	}
}
