package fastlimit

import (
	"net"
	"net/netip"
	"unsafe"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/rules"
)

// Request is the rules.Request view of a fasthttp request. Its strings
// alias the request's buffers: they are valid only until the handler
// returns, which is as long as the engine needs them.
type Request struct {
	Ctx *fasthttp.RequestCtx
}

var _ rules.Request = Request{}

// b2s views b as a string without copying. The bytes must not change while
// the string is in use.
func b2s(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// Method returns the request method.
func (r Request) Method() string { return b2s(r.Ctx.Method()) }

// Host returns the Host header (or the absolute URI's host).
func (r Request) Host() string { return b2s(r.Ctx.Host()) }

// Path returns the decoded, normalized path.
func (r Request) Path() string { return b2s(r.Ctx.Path()) }

// Query returns the first value of a query parameter, decoded.
func (r Request) Query(name string) (string, bool) {
	return rules.QueryValue(b2s(r.Ctx.URI().QueryString()), name)
}

// FirstHeader returns the field's first line (rules.FirstHeader), as
// fasthttp's Peek does.
func (r Request) FirstHeader(name string) (string, bool) {
	v := r.Ctx.Request.Header.Peek(name)
	if v == nil {
		return "", false
	}
	return b2s(v), true
}

// Header returns a header field's value, all field lines joined with ", ".
// Joining several lines allocates; a single line does not.
func (r Request) Header(name string) (string, bool) {
	h := &r.Ctx.Request.Header
	v := h.Peek(name)
	if v == nil {
		return "", false
	}
	all := h.PeekAll(name)
	if len(all) <= 1 {
		return b2s(v), true
	}
	n := 0
	for _, line := range all {
		n += len(line) + 2
	}
	buf := make([]byte, 0, n)
	for i, line := range all {
		if i > 0 {
			buf = append(buf, ", "...)
		}
		buf = append(buf, line...)
	}
	return b2s(buf), true
}

// RemoteAddr returns the TCP peer's address (IPv4 unmapped from
// IPv6), or the zero AddrPort when the connection is not TCP or has no
// address (fasthttp then reports 0.0.0.0:0, which must not become one
// shared counter).
func (r Request) RemoteAddr() netip.AddrPort {
	if a, ok := r.Ctx.RemoteAddr().(*net.TCPAddr); ok {
		ap := a.AddrPort()
		if ap.Port() == 0 && ap.Addr().Unmap().IsUnspecified() {
			return netip.AddrPort{}
		}
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return netip.AddrPort{}
}
