package rules

import (
	"net/netip"
	"strings"
	"testing"
)

// TestParseProxies: a CIDR is masked, a bare address is its own prefix,
// IPv4-mapped IPv6 is read as IPv4 and a zone is dropped, in both forms;
// the first bad entry is named.
func TestParseProxies(t *testing.T) {
	ps, err := ParseProxies([]string{" 10.1.2.3/8", "192.0.2.7", "::ffff:198.51.100.9", "::ffff:203.0.113.0/120", "fe80::1%eth0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		addr string
		want bool
	}{
		{"10.200.0.1", true}, {"11.0.0.1", false},
		{"192.0.2.7", true}, {"192.0.2.8", false},
		{"198.51.100.9", true},
		{"203.0.113.77", true}, {"203.0.114.1", false},
		{"fe80::1", true},
	} {
		if got := ps.Contains(netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("Contains(%s) = %v, want %v", c.addr, got, c.want)
		}
	}
	if _, err := ParseProxies([]string{"10.0.0.0/8", "not-an-ip"}); err == nil || !strings.Contains(err.Error(), `trusted_proxies[1]: "not-an-ip"`) {
		t.Errorf("a bad entry: %v", err)
	}
	if (Proxies{}).Contains(netip.MustParseAddr("127.0.0.1")) {
		t.Error("the zero Proxies trusts someone")
	}
}
