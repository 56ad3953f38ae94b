package forwardauth

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/rules"
)

// uncleanTargets are spellings of paths under /api/ (and of others) that
// a client can send through a proxy which forwards the target as sent.
var uncleanTargets = []string{
	"/api/x", "//api/x", "/./api/x", "/x/../api/x", "/../api/x", "/api//x//",
	"/%2e/api/x", "/%2E%2E/api/x", "/x/%2e%2e/api/x", "/x/..%2Fapi/x", "/api%2Fx",
	"/%2Fapi/x", "/api/x/..", "/api/.", "/a%20b", "/bad%zz/../api/x", "/api/x%4",
	"/%61pi/x", "/api/x/%2e", "/a/.hidden/../../api/x",
}

// The path forward-auth decides on is the one the gateway decides on
// for the same request-target: fasthttp's (the HTTP/1.1 listener) and
// net/http's with rules.CleanPath (the HTTP/2 listener, which refuses a
// target whose escapes do not decode).
func TestPathIsTheGatewaysPath(t *testing.T) {
	for _, target := range uncleanTargets {
		got, _, err := parseTarget(target)
		if err != nil {
			t.Fatalf("parseTarget(%q): %v", target, err)
		}
		var u fasthttp.URI
		if err := u.Parse([]byte("h.example"), []byte(target)); err != nil {
			t.Fatalf("fasthttp: %q: %v", target, err)
		}
		if h1 := string(u.Path()); got != h1 {
			t.Errorf("%q: forward-auth decides on %q, the gateway's HTTP/1.1 listener on %q", target, got, h1)
		}
		if nu, err := url.ParseRequestURI(target); err == nil {
			if h2 := rules.CleanPath(nu.Path); got != h2 {
				t.Errorf("%q: forward-auth decides on %q, the gateway's HTTP/2 listener on %q", target, got, h2)
			}
		}
		if strings.Contains(target, "api") && !strings.HasPrefix(target, "/a%20") && !strings.HasPrefix(got, "/api/") {
			t.Errorf("%q: decided as %q, outside /api/", target, got)
		}
	}
}

// Every unclean spelling of a path under /api/ counts against the /api/
// rule, in both styles: the limit of 2 holds.
func TestUncleanPathsCountAgainstTheRule(t *testing.T) {
	targets := []string{"//api/x", "/./api/x", "/x/../api/x", "/%2e/api/x", "/api%2Fx", "/x/..%2Fapi/x", "/api/x/.."}
	for _, style := range []struct {
		path   string
		fields func(method, uri, client string) map[string]string
		refuse int
	}{{"/auth", forwarded, http.StatusTooManyRequests}, {"/auth/nginx", nginx, http.StatusForbidden}} {
		h := newHandler(t, twoPerMinute(), nil, Config{})
		allowed := 0
		for _, target := range targets {
			w := ask(h, proxy, style.path, style.fields("GET", target, "192.0.2.7"))
			switch w.Code {
			case http.StatusOK:
				allowed++
				if w.Header().Get("RateLimit") == "" {
					t.Errorf("%s %q: allowed without RateLimit fields: not counted", style.path, target)
				}
			case style.refuse:
			default:
				t.Fatalf("%s %q: %d %s", style.path, target, w.Code, w.Body)
			}
		}
		if allowed != 2 {
			t.Errorf("%s: %d of %d allowed, want 2 (the limit)", style.path, allowed, len(targets))
		}
	}
}

func FuzzParseTargetPath(f *testing.F) {
	for _, s := range uncleanTargets {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		if target == "" || target[0] != '/' {
			return
		}
		got, _, err := parseTarget(target)
		if err != nil {
			return // control characters: refused
		}
		if !strings.HasPrefix(got, "/") || rules.CleanPath(got) != got {
			t.Fatalf("%q: path %q is not clean", target, got)
		}
		var u fasthttp.URI
		if u.Parse([]byte("h"), []byte(target)) == nil && string(u.Path()) != got {
			t.Fatalf("%q: forward-auth %q, fasthttp %q", target, got, u.Path())
		}
	})
}
