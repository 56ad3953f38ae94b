package rules

import (
	"fmt"
	"net/netip"
	"strings"
)

// Proxies is a parsed list of trusted proxies (ClientIP.TrustedProxies):
// the one reading of that list for the rule engine, the gateway's
// forwarding headers and forward-auth's forwarded request, so that the
// three never disagree on who is trusted. The zero Proxies trusts nobody.
type Proxies []netip.Prefix

// ParseProxies reads each entry of list as a CIDR or a bare address (its
// own /32 or /128), masked, IPv4-mapped IPv6 unmapped, zones dropped. An
// error names the first entry that is neither.
func ParseProxies(list []string) (Proxies, error) {
	var out Proxies
	for i, s := range list {
		p, err := parseProxy(s)
		if err != nil {
			return nil, fmt.Errorf("trusted_proxies[%d]: %q is not a CIDR or address", i, s)
		}
		out = append(out, p)
	}
	return out, nil
}

func parseProxy(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		p = p.Masked()
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		return p, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap().WithZone("")
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// Contains reports whether a (unmapped, without zone) is a trusted proxy.
func (t Proxies) Contains(a netip.Addr) bool {
	for _, p := range t {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
