package h2path

import (
	"net/url"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/gateway/exchange"
	"github.com/tollgate-dev/tollgate/rules"
)

// The HTTP/2 path reads the request target from the wire: cleaning it,
// and building the upstream's path from it, never panic; the upstream
// path stays under the route's base path and has no dot segment left
// when the client's had one.
func FuzzH2Path(f *testing.F) {
	for _, s := range []string{"/a/b", "/a/../../etc", "/a%2F..%2F..%2Fadmin", "//x//y/", "/./", "*", "/%zz", "/a/%2e%2e/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if raw != "*" && !strings.HasPrefix(raw, "/") {
			return // net/http takes only these (RFC 9113 §8.3.1)
		}
		dec, err := url.PathUnescape(raw)
		if err != nil {
			dec = raw
		}
		clean := rules.CleanPath(dec)
		if strings.HasPrefix(dec, "/") && !strings.HasPrefix(clean, "/") {
			t.Fatalf("rules.CleanPath(%q) = %q", dec, clean)
		}
		u := &url.URL{}
		setUpstreamPathH2(u, clean, raw, "/base")
		if raw == "*" {
			return
		}
		p := u.EscapedPath()
		if !strings.HasPrefix(p, "/base") {
			t.Fatalf("raw %q: upstream path %q leaves /base", raw, p)
		}
		if exchange.HasDotSegment([]byte(raw)) && exchange.HasDotSegment([]byte(p)) {
			t.Fatalf("raw %q: upstream path %q keeps a dot segment", raw, p)
		}
		IsGRPCContentType([]string{raw})
	})
}
