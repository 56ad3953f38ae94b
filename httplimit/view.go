package httplimit

import (
	"net/http"
	"net/netip"
	"strings"

	"github.com/tollgate-dev/tollgate/rules"
)

// view is the rules.Request of an *http.Request. It is one pointer, so
// converting it to the interface does not allocate.
type view struct{ r *http.Request }

var _ rules.Request = view{}

func (v view) Method() string { return v.r.Method }

func (v view) Host() string { return v.r.Host }

func (v view) Path() string { return v.r.URL.Path }

func (v view) Query(name string) (string, bool) { return rules.QueryValue(v.r.URL.RawQuery, name) }

// Header indexes the header map directly: the engine passes canonical
// names. Several field lines are joined with ", " (RFC 9110 §5.3), which
// allocates; one line does not.
func (v view) Header(name string) (string, bool) {
	vals := v.r.Header[name]
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
func (v view) FirstHeader(name string) (string, bool) {
	vals := v.r.Header[name]
	if len(vals) == 0 {
		return "", false
	}
	return vals[0], true
}

// RemoteAddr parses http.Request.RemoteAddr ("ip:port"); the zero AddrPort
// when it is not one (a Unix socket, a test that left it empty).
func (v view) RemoteAddr() netip.AddrPort {
	ap, err := netip.ParseAddrPort(v.r.RemoteAddr)
	if err != nil {
		return netip.AddrPort{}
	}
	return ap
}
