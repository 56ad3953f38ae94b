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
	writeResponse(ctx, res.AppendRefusal(body[:0]), res)
}

// WriteProblem answers ctx with what the engine did not decide (no route,
// a malformed request, an upstream that failed): an RFC 9457
// application/problem+json body (rules.AppendProblem) of status, title
// and detail, with Cache-Control: no-store, written as WriteRefusal
// writes a refusal (X-Content-Type-Options: nosniff, no body for HEAD).
// It replaces whatever the response held, and allocates nothing.
func WriteProblem(ctx *fasthttp.RequestCtx, status int, title, detail string) {
	var body [512]byte
	writeResponse(ctx, rules.Response{Status: status, ContentType: rules.ContentTypeProblem,
		Body: rules.AppendProblem(body[:0], status, title, detail)}, nil)
	ctx.Response.Header.SetCanonical(hdrCacheControl, valNoStore)
}

// writeResponse replaces ctx's response with ref: its status, content
// type, body (none for HEAD), X-Content-Type-Options: nosniff, and the
// header fields of res when it is not nil. It is the one writer of
// fastlimit's answers, as httplimit.WriteRefusal is net/http's.
func writeResponse(ctx *fasthttp.RequestCtx, ref rules.Response, res *rules.Result) {
	resp := &ctx.Response
	resp.Reset()
	resp.SetStatusCode(ref.Status)
	resp.Header.SetCanonical(hdrNosniff, valNosniff) // as httplimit
	if res != nil {
		SetHeaders(&resp.Header, res)
	}
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
	hdrCacheControl    = []byte(rules.HeaderCacheControl)
	valNoStore         = []byte("no-store")
)

// s2b views s as bytes without copying; fasthttp copies what it keeps.
func s2b(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
