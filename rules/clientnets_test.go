package rules

import (
	"net/netip"
	"testing"
)

// ClientNets finds the client as the engine's ip key does: the peer,
// the forwarded address only from a trusted proxy, at the configured
// prefixes.
func TestClientNets(t *testing.T) {
	n, err := NewClientNets(ClientIP{TrustedProxies: []string{"10.0.0.0/8"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		r    *req
		want string
	}{
		{get("/", "192.0.2.7"), "192.0.2.7/32"},
		{get("/", "192.0.2.7").with("X-Forwarded-For", "198.51.100.1"), "192.0.2.7/32"},
		{get("/", "10.1.2.3").with("X-Forwarded-For", "198.51.100.1"), "198.51.100.1/32"},
		{get("/", "2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64"},
	} {
		p, ok := n.Of(tc.r)
		if !ok || p != netip.MustParsePrefix(tc.want) {
			t.Errorf("%v %v: %v %v, want %s", tc.r.remote, tc.r.header, p, ok, tc.want)
		}
	}
	if _, ok := n.Of(&req{header: map[string]string{}}); ok {
		t.Error("a request without a peer address has a client network")
	}
	if _, err := NewClientNets(ClientIP{TrustedProxies: []string{"nonsense"}}); err == nil {
		t.Error("a bad trusted proxy is accepted")
	}
}
