package httplimit

import (
	"net/http"
	"net/netip"
	"strings"

	"github.com/tollgate-dev/tollgate/rules"
)

// Request is the rules.Request view of an *http.Request. It is one
// pointer, so converting it to the interface does not allocate. A front
// end deciding on another request than the one it serves (forwardauth's
// original request) embeds it for the header fields and the peer, and
// overrides what differs.
type Request struct{ Req *http.Request }

var _ rules.Request = Request{}

// Method returns the request method.
func (v Request) Method() string { return v.Req.Method }

// Host returns the Host field (or the absolute URI's host).
func (v Request) Host() string { return v.Req.Host }

// Path returns the decoded path, cleaned by rules.CleanPath (dot
// segments resolved, repeated slashes collapsed) as the gateway and
// forward-auth clean it, so that no spelling of a path slips past a rule
// on its prefix whatever router serves it. It allocates only for a path
// that needs cleaning.
func (v Request) Path() string { return rules.CleanPath(v.Req.URL.Path) }

// Query returns the first value of a query parameter, decoded.
func (v Request) Query(name string) (string, bool) {
	return rules.QueryValue(v.Req.URL.RawQuery, name)
}

// Header indexes the header map directly: the engine passes canonical
// names. Several field lines are joined with ", " (RFC 9110 §5.3), which
// allocates; one line does not.
func (v Request) Header(name string) (string, bool) {
	vals := v.Req.Header[name]
	switch len(vals) {
	case 0:
		return "", false
	case 1:
		return vals[0], true
	}
	return strings.Join(vals, ", "), true
}

// FirstHeader returns the field's first line (rules.FirstHeader), as
// Header.Get does.
func (v Request) FirstHeader(name string) (string, bool) {
	vals := v.Req.Header[name]
	if len(vals) == 0 {
		return "", false
	}
	return vals[0], true
}

// RemoteAddr parses http.Request.RemoteAddr ("ip:port"); the zero AddrPort
// when it is not one (a Unix socket, a test that left it empty).
func (v Request) RemoteAddr() netip.AddrPort {
	ap, err := netip.ParseAddrPort(v.Req.RemoteAddr)
	if err != nil {
		return netip.AddrPort{}
	}
	return ap
}
