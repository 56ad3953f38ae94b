package fastlimit

import (
	"unsafe"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/rules"
)

// SetHeaders sets the engine's response header fields for res (rate-limit
// fields, and on a refusal Retry-After and Cache-Control) on resp,
// replacing any of the same name the upstream or handler wrote. It
// allocates nothing: the per-request values are written into a buffer on
// the stack, which fasthttp copies.
func SetHeaders(resp *fasthttp.ResponseHeader, res *rules.Result) {
	var hs [10]rules.RawHeader
	var vb [128]byte
	raw, vals := res.AppendRawHeaders(hs[:0], vb[:0])
	for _, h := range raw {
		v := s2b(h.Value)
		if h.End > 0 {
			v = vals[h.Start:h.End]
		}
		// The engine's names are canonical already: skip fasthttp's
		// normalization.
		resp.SetCanonical(s2b(h.Name), v)
	}
}

// WriteRefusal answers ctx with res's refusal: its status, its headers and
// its body (none for HEAD). Call it when res.Refused() reports true. The
// default problem+json body is written into a buffer on the stack and
// copied into fasthttp's pooled body buffer: no allocation.
func WriteRefusal(ctx *fasthttp.RequestCtx, res *rules.Result) {
	var body [512]byte
	ref := res.AppendRefusal(body[:0])
	resp := &ctx.Response
	resp.Reset()
	resp.SetStatusCode(ref.Status)
	resp.Header.SetCanonical(hdrNosniff, valNosniff) // as httplimit
	SetHeaders(&resp.Header, res)
	if ref.ContentType == rules.ContentTypeProblem {
		resp.Header.SetContentTypeBytes(contentTypeProblem)
	} else if ref.ContentType != "" {
		resp.Header.SetContentType(ref.ContentType)
	}
	if ctx.IsHead() {
		resp.SkipBody = true
		resp.Header.SetContentLength(len(ref.Body))
		return
	}
	resp.SetBody(ref.Body)
}

var (
	contentTypeProblem = []byte(rules.ContentTypeProblem)
	hdrNosniff         = []byte("X-Content-Type-Options")
	valNosniff         = []byte("nosniff")
)

// s2b views s as bytes without copying; fasthttp copies what it keeps.
func s2b(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
