package forwardauth

import (
	"errors"
	"net/http"
	"net/netip"
	"strings"

	"github.com/tollgate-dev/tollgate/httplimit"
	"github.com/tollgate-dev/tollgate/internal/escape"
	"github.com/tollgate-dev/tollgate/rules"
)

// fields names the request header fields that carry the original
// request's method, request-target and host, in canonical form.
type fields struct {
	method, uri, host string
}

// The field sets of the two styles: nginx's auth_request convention (the
// shipped snippet sets each with proxy_set_header, overwriting whatever
// the client sent), and the X-Forwarded-* fields Traefik's ForwardAuth and
// Caddy's forward_auth set.
var (
	nginxFields     = fields{method: "X-Original-Method", uri: "X-Original-Uri", host: "X-Forwarded-Host"}
	forwardedFields = fields{method: "X-Forwarded-Method", uri: "X-Forwarded-Uri", host: "X-Forwarded-Host"}
)

// Errors of a forwarded request that cannot be decided on.
var (
	// ErrMissingField is a method or request-target field that the
	// trusted proxy did not send: its configuration lacks a line.
	ErrMissingField = errors.New("forwarded request field missing")
	// ErrBadMethod is a method field that is not an HTTP token.
	ErrBadMethod = errors.New("forwarded method is not an HTTP token")
	// ErrBadURI is a request-target field that is neither origin-form
	// ("/path?query"), absolute-form ("https://host/path") nor "*", or
	// that holds a control character.
	ErrBadURI = errors.New("forwarded request-target is malformed")
	// ErrBadHost is a host field holding a control character, a space or
	// a character no host has.
	ErrBadHost = errors.New("forwarded host is malformed")
)

// original is the rules.Request view of the request a proxy asks about:
// the method, path, query and host from the forwarded fields, the header
// fields and peer of the auth request itself, read as httplimit reads
// them (the proxy copies the client's fields, and the engine reads the
// client address from the forwarding fields of a trusted peer, as
// rules.ClientIP says).
type original struct {
	httplimit.Request                           // Header, FirstHeader: the proxy's
	peer                         netip.AddrPort // set by ServeHTTP
	method, host, path, rawQuery string
}

var _ rules.Request = (*original)(nil)

// Method returns the forwarded method.
func (o *original) Method() string { return o.method }

// Host returns the forwarded host.
func (o *original) Host() string { return o.host }

// Path returns the forwarded path, decoded.
func (o *original) Path() string { return o.path }

// RemoteAddr returns the auth request's peer (the proxy): the one
// ServeHTTP parsed for its trust check, or, unset, parsed here as
// httplimit.Request.RemoteAddr parses it.
func (o *original) RemoteAddr() netip.AddrPort {
	if o.peer.IsValid() {
		return o.peer
	}
	return o.Request.RemoteAddr()
}

// Query returns the first value of a parameter of the forwarded query.
func (o *original) Query(name string) (string, bool) { return rules.QueryValue(o.rawQuery, name) }

// readOriginal reads the original request from r's fields f. The method
// and request-target are required; a missing host leaves Host empty (host
// rules then do not match). It returns the field at fault with the error.
func readOriginal(r *http.Request, f fields) (original, string, error) {
	o := original{Request: httplimit.Request{Req: r}}
	m, ok := first(r.Header, f.method)
	if !ok || m == "" {
		return o, f.method, ErrMissingField
	}
	if !isToken(m) {
		return o, f.method, ErrBadMethod
	}
	u, ok := first(r.Header, f.uri)
	if !ok || u == "" {
		return o, f.uri, ErrMissingField
	}
	path, query, err := parseTarget(u)
	if err != nil {
		return o, f.uri, err
	}
	h, _ := first(r.Header, f.host)
	if !validHost(h) {
		return o, f.host, ErrBadHost
	}
	o.method, o.path, o.rawQuery, o.host = m, path, query, h
	return o, "", nil
}

// first is the field's first line: a proxy that appends its own line
// after the client's would otherwise let the client choose; the shipped
// snippets set (replace) every field they send.
func first(h http.Header, name string) (string, bool) {
	vals := h[name]
	if len(vals) == 0 {
		return "", false
	}
	return strings.TrimSpace(vals[0]), true
}

// parseTarget splits a request-target as a proxy forwards it (nginx's
// $request_uri, Traefik's and Caddy's request URI) into the path rules
// match on and the raw query. The absolute form's scheme and authority
// are dropped (the host comes from its own field), and a fragment, which
// no client sends, is cut off. The path is decoded as the gateway's
// HTTP/1.1 listener (fasthttp) decodes it: every valid escape, %2F and
// %2E included, an invalid one ("%zz") kept as sent, since the proxy
// accepted the request and it is decided rather than answered with an
// error a proxy might turn into "allow". It is then cleaned by
// rules.CleanPath, as the gateway cleans its own requests' paths: the
// proxies forward the target as the client sent it, and "//api/x",
// "/./api/x", "/x/../api/x" or "/%2e/api/x" must count against a rule on
// /api/ as "/api/x" does.
func parseTarget(u string) (path, rawQuery string, err error) {
	for i := 0; i < len(u); i++ {
		if c := u[i]; c < 0x21 || c == 0x7f {
			return "", "", ErrBadURI
		}
	}
	if u == "" {
		return "", "", ErrBadURI
	}
	if u == "*" {
		return "*", "", nil
	}
	if u[0] != '/' {
		scheme, rest, ok := strings.Cut(u, "://")
		if !ok || !strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https") {
			return "", "", ErrBadURI
		}
		i := strings.IndexAny(rest, "/?#")
		if i < 0 {
			return "/", "", nil
		}
		u = rest[i:]
		if u[0] != '/' {
			u = "/" + u
		}
	}
	u, _, _ = strings.Cut(u, "#")
	raw, query, _ := strings.Cut(u, "?")
	return rules.CleanPath(decodePath(raw)), query, nil
}

// decodePath decodes the escapes of a raw path as fasthttp does: "%"
// and two hex digits is the byte they name, anything else is kept as
// it is ("+" too: it is a space only in a query). It allocates only
// when raw has an escape.
func decodePath(raw string) string {
	i := strings.IndexByte(raw, '%')
	if i < 0 {
		return raw
	}
	b := make([]byte, 0, len(raw))
	b = append(b, raw[:i]...)
	for ; i < len(raw); i++ {
		c := raw[i]
		if c == '%' && i+2 < len(raw) {
			if h, l := escape.Unhex(raw[i+1]), escape.Unhex(raw[i+2]); h >= 0 && l >= 0 {
				b = append(b, byte(h<<4|l))
				i += 2
				continue
			}
		}
		b = append(b, c)
	}
	return string(b)
}

// isToken reports whether s is an RFC 9110 token (a method).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHost reports whether h can be a host[:port] (or is empty): no
// control characters, spaces or characters outside a reg-name, an IP
// literal and a port.
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~!$&'()*+,;=:[]%", c) >= 0:
		default:
			return false
		}
	}
	return true
}
