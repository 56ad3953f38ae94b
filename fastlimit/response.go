package fastlimit

import (
	"sync"
	"unsafe"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/rules"
)

// headerPool recycles the slices SetHeaders collects fields into.
var headerPool = sync.Pool{New: func() any { s := make([]rules.Header, 0, 16); return &s }}

// SetHeaders sets the engine's response header fields for res (rate-limit
// fields, and on a refusal Retry-After and Cache-Control) on resp,
// replacing any of the same name the upstream or handler wrote.
func SetHeaders(resp *fasthttp.ResponseHeader, res *rules.Result) {
	p := headerPool.Get().(*[]rules.Header)
	hs := res.AppendHeaders((*p)[:0])
	for _, h := range hs {
		// The engine's names are canonical already: skip fasthttp's
		// normalization.
		resp.SetCanonical(s2b(h.Name), s2b(h.Value))
	}
	clear(hs)
	*p = hs[:0]
	headerPool.Put(p)
}

// WriteRefusal answers ctx with res's refusal: its status, its headers and
// its body (none for HEAD). Call it when res.Refused() reports true.
func WriteRefusal(ctx *fasthttp.RequestCtx, res *rules.Result) {
	ref := res.Refusal()
	ctx.Response.Reset()
	ctx.SetStatusCode(ref.Status)
	SetHeaders(&ctx.Response.Header, res)
	if ref.ContentType != "" {
		ctx.SetContentType(ref.ContentType)
	}
	if ctx.IsHead() {
		ctx.Response.SkipBody = true
		ctx.Response.Header.SetContentLength(len(ref.Body))
		return
	}
	ctx.SetBody(ref.Body)
}

// s2b views s as bytes without copying; fasthttp copies what it keeps.
func s2b(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
