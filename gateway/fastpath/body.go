package fastpath

import (
	"io"
	"sync"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/gateway/exchange"
)

// clientBody is a request body on its way from the client to the
// upstream. It holds a body to the size limit as it streams (a chunked
// body announces no length to check beforehand), and it remembers why
// reading the client's body failed, so that the gateway answers for the
// client's fault (400, 408, 413) instead of reporting an upstream error.
//
// Only the goroutine serving the request uses it.
type clientBody struct {
	r      io.Reader
	limit  int64 // the most bytes passed on; 0 for no limit
	length int64 // the announced length; -1 for a chunked body
	n      int64 // bytes passed on
	err    error // why the client's body failed, errBodyTooLarge included
}

var clientBodies = sync.Pool{New: func() any { return new(clientBody) }}

// wrapClientBody puts a clientBody, taken from a pool, between req and its
// body stream, if it has one. Give it back with release once the request
// has been written.
func wrapClientBody(req *fasthttp.Request, limit int64) *clientBody {
	stream := req.BodyStream()
	length := req.Header.ContentLength()
	if stream == nil || length == 0 {
		return nil
	}
	b := clientBodies.Get().(*clientBody)
	*b = clientBody{r: stream, limit: limit, length: int64(length)}
	req.SetBodyStream(b, length)
	return b
}

// Read passes the client's body on, up to the limit, and notes why it
// failed, if it does. A body that ends before its announced length
// failed as well.
func (b *clientBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.limit > 0 && int64(len(p)) > b.limit-b.n+1 {
		p = p[:b.limit-b.n+1] // one byte more tells a body over the limit
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	switch {
	case b.limit > 0 && b.n > b.limit:
		n -= int(b.n - b.limit)
		b.n = b.limit
		b.err = exchange.ErrBodyTooLarge
		return n, b.err
	case err == io.EOF && b.length >= 0 && b.n < b.length:
		b.err = io.ErrUnexpectedEOF
		return n, b.err
	case err != nil && err != io.EOF:
		b.err = err
	}
	return n, err
}

// failed is why the client's body failed so far, or nil. A nil b has not
// failed.
func (b *clientBody) failed() error {
	if b == nil {
		return nil
	}
	return b.err
}

// release returns why the client's body failed, or nil, and gives b back
// to the pool. A nil b has not failed.
func (b *clientBody) release() error {
	if b == nil {
		return nil
	}
	err := b.err
	*b = clientBody{}
	clientBodies.Put(b)
	return err
}

// bodyError answers a request whose body could not be read from the
// client (clientBodyFault). After a 400 or 408 the connection closes: it
// is somewhere inside a body it cannot frame. After a 413 the server
// drains what is left of the body, once the answer is sent, and closes
// only if too much is (so that the client reads the 413 rather than a
// reset).
func bodyError(ctx *fasthttp.RequestCtx, err error) {
	status, title, detail := exchange.ClientBodyFault(err)
	problem(ctx, status, title, detail)
	if status != fasthttp.StatusRequestEntityTooLarge {
		ctx.SetConnectionClose()
	}
}
