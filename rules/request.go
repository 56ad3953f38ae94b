package rules

import "net/netip"

// Request is the view of an HTTP request the engine reads. Adapters
// implement it over their HTTP stack without allocating (package httplimit
// for net/http; the gateway's for fasthttp). Strings returned need only stay
// valid during Engine.Decide and the use of its Result.
type Request interface {
	// Method is the request method, e.g. "GET".
	Method() string
	// Host is the request's host (Host header or :authority), possibly
	// with a port.
	Host() string
	// Path is the decoded URL path, e.g. "/items/42".
	Path() string
	// Query returns the first value of the query parameter name, decoded,
	// and whether it is present. QueryValue implements it over a raw
	// query string.
	Query(name string) (string, bool)
	// Header returns the field's value, all field lines joined with ", "
	// in order (RFC 9110 §5.3), and whether it is present. The engine
	// passes names in canonical form (textproto.CanonicalMIMEHeaderKey),
	// so a net/http adapter may index the header map directly.
	Header(name string) (string, bool)
	// RemoteAddr is the TCP peer's address. The zero AddrPort means
	// unknown (e.g. a Unix socket); requests keyed by IP then use the
	// anonymous bucket or are not limited by that rule.
	RemoteAddr() netip.AddrPort
}

// FirstHeader is implemented by a Request that can return a header
// field's first line alone. Header key parts (header:NAME) and
// Match.Headers read it when the request implements it: a backend that
// reads one value (net/http's Header.Get, nginx's $http_name) reads the
// first line, and a client must not get a fresh counter for its API key,
// or slip past a rule, by sending the field twice. Without it the engine
// reads Header's joined value. The client-IP headers are lists and are
// always read joined.
type FirstHeader interface {
	// FirstHeader returns the value of the field's first line, and
	// whether the field is present. Names are canonical, as for Header.
	FirstHeader(name string) (string, bool)
}

// firstHeader reads name's first field line when req can, its joined
// value otherwise.
func firstHeader(req Request, name string) (string, bool) {
	if f, ok := req.(FirstHeader); ok {
		return f.FirstHeader(name)
	}
	return req.Header(name)
}

// TLSFingerprint is implemented by a Request that can tell the JA4
// fingerprint (package ja4) of the TLS ClientHello its connection began
// with. The ja4 key part and Match.JA4 read it; a Request without it, or
// whose JA4 is "", has none.
type TLSFingerprint interface {
	// JA4 is the connection's JA4 fingerprint, or "" when the request
	// did not arrive over TLS.
	JA4() string
}
