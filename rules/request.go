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
