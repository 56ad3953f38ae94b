package rules

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// FuzzClientAddr: whatever a client or proxy writes in the forwarding
// header, the resolver returns the peer or an address written in the
// header, and never panics. From an untrusted peer it is always the peer.
func FuzzClientAddr(f *testing.F) {
	for _, s := range []string{"1.2.3.4", "1.2.3.4, 10.0.0.1", "[::1]:80", `for="[2001:db8::1]:4711";proto=https`, "for=unknown", ",,,", "for=\"\\\"", "[", "::ffff:1.2.3.4"} {
		f.Add(s, true, uint8(0))
		f.Add(s, false, uint8(1))
	}
	f.Fuzz(func(t *testing.T, hv string, trustedPeer bool, kind uint8) {
		header := []string{"X-Forwarded-For", "Forwarded", "X-Real-IP"}[kind%3]
		var ps problems
		r := compileClientIP(ClientIP{TrustedProxies: []string{"10.0.0.0/8"}, Header: header}, &ps)
		peer := "192.0.2.1"
		if trustedPeer {
			peer = "10.0.0.1"
		}
		q := get("/", peer).with(header, hv)
		a := r.clientAddr(q)
		if !a.IsValid() {
			t.Fatal("no address")
		}
		if a.String() == peer {
			return
		}
		if !trustedPeer {
			t.Fatalf("untrusted peer: client %v from header %q", a, hv)
		}
		// The client must be one of the header's own elements.
		found := false
		for _, elem := range strings.Split(hv, ",") {
			elem = strings.TrimSpace(elem)
			var b netip.Addr
			var ok bool
			if header == "Forwarded" {
				b, ok = forwardedFor(elem)
			} else {
				b, ok = parseHop(elem)
			}
			if header == "X-Real-IP" {
				b, ok = parseHop(strings.TrimSpace(hv))
			}
			found = found || ok && b == a
		}
		if !found {
			t.Fatalf("client %v not in header %q", a, hv)
		}
		if a.Zone() != "" || a.Is4In6() {
			t.Fatalf("client %v not normalized", a)
		}
	})
}

// FuzzPattern: parsing and matching never panic, and a parsed pattern
// with a literal path matches that path.
func FuzzPattern(f *testing.F) {
	for _, s := range []string{"/", "/{$}", "GET /items/{id}", "h.com/a/", "/files/{p...}", "/a/{x}/b"} {
		f.Add(s, "/items/1")
	}
	f.Fuzz(func(t *testing.T, pat, path string) {
		p, err := parsePattern(pat)
		if err != nil {
			return
		}
		p.matches("GET", "h.com", path)
		p.matches("HEAD", "", "/"+path)
	})
}

// FuzzQueryValue agrees with net/url on every query net/url accepts.
func FuzzQueryValue(f *testing.F) {
	for _, s := range []string{"a=1", "a=1&a=2", "b=2&a=%41", "a=+", "%61=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		got, ok := QueryValue(q, "a")
		want, err := url.ParseQuery(q)
		if err != nil {
			return
		}
		w, wok := want["a"]
		if ok != wok || ok && got != w[0] {
			t.Fatalf("%q: %q %v, net/url %q", q, got, ok, w)
		}
	})
}
