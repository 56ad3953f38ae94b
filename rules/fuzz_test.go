package rules

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// FuzzKeyParts: whatever a client sends in the header, the query and the
// path a rule is keyed by, extraction never panics, a rule applies
// exactly when the header and the parameter are present and not empty,
// and the store key reads back unambiguously: one part per key part
// (no value can add a separator), each either the value itself (short,
// printable, not starting with '#') or '#' and the hex of the value's
// SHA-256, so two different requests never share a counter.
func FuzzKeyParts(f *testing.F) {
	for _, s := range [][3]string{
		{"sk-live-1", "api_key=q1", "/items/42"},
		{"", "api_key=", "/"},
		{"a\x1fb", "api_key=%1F&api_key=2", "/a\x1fb"},
		{"#abc", "api_key=%23abc", "/#"},
		{strings.Repeat("k", 129), "api_key=" + strings.Repeat("q", 200), "/" + strings.Repeat("p", 128)},
		{"v\r\nX-Injected: 1", "%61pi_key=%zz&api_key=+x+", "/%2e%2e/"},
		{"\xff\xfe", "api_key=%ff", "/\x7f"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	s := &recordingStore{}
	e, err := New(Config{Rules: []Rule{{Name: "r", Key: Key{"header:X-API-Key", "query:api_key", "path"}, Policies: oneRate}}}, s)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, hv, rawQuery, path string) {
		s.keys = s.keys[:0]
		r := get(path, "192.0.2.1")
		r.header["X-Api-Key"] = hv
		r.query = map[string]string{}
		qv, qok := QueryValue(rawQuery, "api_key")
		if qok {
			r.query["api_key"] = qv
		}
		if _, err := e.Decide(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		applies := hv != "" && qok && qv != ""
		if applies != (len(s.keys) == 1) || len(s.keys) > 1 {
			t.Fatalf("header %q, query %q: keys %q, want one exactly when both are present", hv, rawQuery, s.keys)
		}
		if !applies {
			return
		}
		const prefix = "r" + keySep + "r" + keySep + "token_bucket" + keySep
		key, ok := strings.CutPrefix(s.keys[0], prefix)
		if !ok {
			t.Fatalf("key %q lacks the rule and policy", s.keys[0])
		}
		parts := strings.Split(key, keySep)
		if len(parts) != 3 {
			t.Fatalf("key %q: %d parts, want 3", key, len(parts))
		}
		for i, v := range []string{hv, qv, path} {
			if p := parts[i]; p != v && p != fuzzHashed(v) {
				t.Fatalf("part %d of %q is %q: neither %q nor its hash", i, key, p, v)
			}
			if strings.HasPrefix(v, "#") || len(v) > 128 {
				if parts[i] != fuzzHashed(v) {
					t.Fatalf("part %d: %q kept raw, want it hashed", i, v)
				}
			}
		}
	})
}

// fuzzHashed is the form of a key value that is not kept raw, written
// out independently of the engine's code.
func fuzzHashed(v string) string {
	sum := sha256.Sum256([]byte(v))
	return "#" + hex.EncodeToString(sum[:16])
}
