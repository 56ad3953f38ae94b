package rules

import (
	"net/netip"
	"testing"
)

// clientOf resolves the client address of a request from peer with the
// given header set, under c.
func clientOf(t *testing.T, c ClientIP, peer, name, value string) string {
	t.Helper()
	var ps problems
	r := compileClientIP(c, &ps)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	q := get("/", peer)
	if name != "" {
		q.with(name, value)
	}
	a := r.clientAddr(q)
	if !a.IsValid() {
		return "invalid"
	}
	return a.String()
}

func TestClientIPSpoofing(t *testing.T) {
	trusted := ClientIP{TrustedProxies: []string{"10.0.0.0/8", "2001:db8:ffff::/48"}}
	tests := []struct {
		name       string
		c          ClientIP
		peer       string
		hdr, value string
		want       string
	}{
		// Nothing is trusted by default: headers are ignored.
		{"default ignores XFF", ClientIP{}, "203.0.113.7", "X-Forwarded-For", "1.2.3.4", "203.0.113.7"},
		{"default ignores Forwarded", ClientIP{Header: "Forwarded"}, "203.0.113.7", "Forwarded", "for=1.2.3.4", "203.0.113.7"},
		{"default ignores X-Real-IP", ClientIP{Header: "X-Real-IP"}, "203.0.113.7", "X-Real-IP", "1.2.3.4", "203.0.113.7"},
		// An untrusted peer cannot spoof, even with trusted proxies configured.
		{"untrusted peer XFF", trusted, "203.0.113.7", "X-Forwarded-For", "1.2.3.4", "203.0.113.7"},
		{"untrusted peer claims trusted hop", trusted, "203.0.113.7", "X-Forwarded-For", "1.2.3.4, 10.0.0.1", "203.0.113.7"},
		// Through a trusted proxy: the rightmost untrusted hop is the client.
		{"one trusted proxy", trusted, "10.0.0.1", "X-Forwarded-For", "198.51.100.9", "198.51.100.9"},
		{"client prepends a fake", trusted, "10.0.0.1", "X-Forwarded-For", "1.2.3.4, 198.51.100.9", "198.51.100.9"},
		{"two trusted hops", trusted, "10.0.0.1", "X-Forwarded-For", "1.2.3.4, 198.51.100.9, 10.1.1.1", "198.51.100.9"},
		{"client fakes a trusted hop at the left", trusted, "10.0.0.1", "X-Forwarded-For", "10.9.9.9, 198.51.100.9", "198.51.100.9"},
		{"all trusted: leftmost", trusted, "10.0.0.1", "X-Forwarded-For", "10.2.2.2, 10.1.1.1", "10.2.2.2"},
		{"garbage ends the walk at the last trusted", trusted, "10.0.0.1", "X-Forwarded-For", "1.2.3.4, not-an-ip", "10.0.0.1"},
		{"garbage beyond the client is never read", trusted, "10.0.0.1", "X-Forwarded-For", "junk, 198.51.100.9", "198.51.100.9"},
		{"absent header: the peer", trusted, "10.0.0.1", "", "", "10.0.0.1"},
		{"port in XFF", trusted, "10.0.0.1", "X-Forwarded-For", "198.51.100.9:4711", "198.51.100.9"},
		{"bracketed v6 in XFF", trusted, "10.0.0.1", "X-Forwarded-For", "[2001:db8::1]:4711", "2001:db8::1"},
		{"trusted v6 proxy", trusted, "2001:db8:ffff::1", "X-Forwarded-For", "198.51.100.9", "198.51.100.9"},
		{"mapped peer is unmapped", trusted, "::ffff:10.0.0.1", "X-Forwarded-For", "198.51.100.9", "198.51.100.9"},
		// Only the configured header is read, so a client cannot smuggle
		// an address through another one the proxy passes along.
		{"other header ignored", trusted, "10.0.0.1", "X-Real-IP", "1.2.3.4", "10.0.0.1"},
		{"Forwarded ignored when XFF configured", trusted, "10.0.0.1", "Forwarded", "for=1.2.3.4", "10.0.0.1"},
		// RFC 7239.
		{"forwarded", ClientIP{TrustedProxies: trusted.TrustedProxies, Header: "Forwarded"}, "10.0.0.1", "Forwarded",
			`for=1.2.3.4, for=198.51.100.9;proto=https;by=10.0.0.1`, "198.51.100.9"},
		{"forwarded quoted v6", ClientIP{TrustedProxies: trusted.TrustedProxies, Header: "Forwarded"}, "10.0.0.1", "Forwarded",
			`For="[2001:db8:cafe::17]:4711"`, "2001:db8:cafe::17"},
		{"forwarded unknown stops", ClientIP{TrustedProxies: trusted.TrustedProxies, Header: "Forwarded"}, "10.0.0.1", "Forwarded",
			`for=1.2.3.4, for=unknown`, "10.0.0.1"},
		{"forwarded obfuscated stops", ClientIP{TrustedProxies: trusted.TrustedProxies, Header: "Forwarded"}, "10.0.0.1", "Forwarded",
			`for=1.2.3.4, for=_hidden`, "10.0.0.1"},
		{"forwarded without for", ClientIP{TrustedProxies: trusted.TrustedProxies, Header: "Forwarded"}, "10.0.0.1", "Forwarded",
			`proto=https`, "10.0.0.1"},
		// X-Real-IP is a single address.
		{"x-real-ip", ClientIP{TrustedProxies: trusted.TrustedProxies, Header: "x-real-ip"}, "10.0.0.1", "X-Real-IP", "198.51.100.9", "198.51.100.9"},
		{"x-real-ip garbage", ClientIP{TrustedProxies: trusted.TrustedProxies, Header: "X-Real-IP"}, "10.0.0.1", "X-Real-IP", "1.2.3.4, 5.6.7.8", "10.0.0.1"},
		// A bare address is a /32 or /128.
		{"bare trusted address", ClientIP{TrustedProxies: []string{"10.0.0.1"}}, "10.0.0.2", "X-Forwarded-For", "1.2.3.4", "10.0.0.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clientOf(t, tt.c, tt.peer, tt.hdr, tt.value); got != tt.want {
				t.Fatalf("client %s, want %s", got, tt.want)
			}
		})
	}
}

func TestClientIPAggregation(t *testing.T) {
	tests := []struct {
		c          ClientIP
		addr, want string
	}{
		{ClientIP{}, "2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{ClientIP{IPv6Prefix: 48}, "2001:db8:1:2:3:4:5:6", "2001:db8:1::/48"},
		{ClientIP{IPv6Prefix: 128}, "2001:db8:1:2:3:4:5:6", "2001:db8:1:2:3:4:5:6/128"},
		{ClientIP{}, "192.0.2.77", "192.0.2.77/32"},
		{ClientIP{IPv4Prefix: 24}, "192.0.2.77", "192.0.2.0/24"},
	}
	for _, tt := range tests {
		var ps problems
		r := compileClientIP(tt.c, &ps)
		if got := r.aggregate(netip.MustParseAddr(tt.addr)).String(); got != tt.want {
			t.Errorf("%+v %s: %s, want %s", tt.c, tt.addr, got, tt.want)
		}
	}
}

// TestIPv6ClientsShareTheirSlash64 checks end to end that two addresses of
// one /64 share a counter and a neighbouring /64 does not.
func TestIPv6ClientsShareTheirSlash64(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{{
		Name:     "ip",
		Policies: []Policy{{Algorithm: "fixed_window", Limit: 2, Window: "1m"}},
	}}})
	decide(t, e, get("/", "2001:db8:0:1::1"))
	decide(t, e, get("/", "2001:db8:0:1:ffff::2"))
	if res := decide(t, e, get("/", "2001:db8:0:1:abcd::3")); res.Outcome != Refused {
		t.Fatalf("third address of the /64: %v, want refused", res.Outcome)
	}
	if res := decide(t, e, get("/", "2001:db8:0:2::1")); res.Outcome != Allowed {
		t.Fatalf("next /64: %v, want allowed", res.Outcome)
	}
}

func TestClientIPConfigErrors(t *testing.T) {
	var ps problems
	compileClientIP(ClientIP{TrustedProxies: []string{"10.0.0.0/33", "nonsense"}, Header: "X-Client", IPv6Prefix: 129, IPv4Prefix: -1}, &ps)
	if len(ps) != 5 {
		t.Fatalf("%d problems, want 5: %v", len(ps), ps)
	}
}
