package rules

import (
	"path"
	"strings"
)

// CleanPath is the path rules match on: p (decoded) with its dot
// segments resolved and its repeated slashes collapsed, as RFC 3986
// §5.2.4 resolves them and as fasthttp normalizes the gateway's HTTP/1.1
// requests, so that "//api/x", "/./api/x" and "/x/../api/x" are all
// "/api/x", and no spelling of a path slips past a rule on its prefix. A
// trailing slash is kept, and so is the one a trailing dot segment
// leaves ("/api/x/.." is "/api/"); ".." never climbs above the root. ""
// and a path not starting with "/" (OPTIONS *) are returned as they are.
//
// Every reader of a request-target that the engine decides on calls it:
// the gateway's HTTP/2 listener (the HTTP/1.1 one gets the same path
// from fasthttp), the net/http middleware (package httplimit), and
// forward-auth (package forwardauth), for the path a proxy forwards. It allocates only when p changes.
func CleanPath(p string) string {
	if p == "" || p[0] != '/' {
		return p
	}
	if !strings.Contains(p, "/.") && !strings.Contains(p, "//") {
		return p
	}
	c := path.Clean(p)
	if c != "/" && (strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..")) {
		c += "/"
	}
	return c
}
