package fastpath

import (
	"errors"
	"net"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/gateway/exchange"
)

// ReadError is the traffic server's fasthttp.Server.ErrorHandler: it
// answers a request that could not be read. fasthttp's own handler tells
// a timeout only when the error is a bare *net.OpError, so a head that
// stalls midway (its timeout wrapped in a header error) got 400; here any
// timeout is 408. The answer never quotes the request: the error may
// carry its head, credentials included.
func ReadError(ctx *fasthttp.RequestCtx, err error) {
	var small *fasthttp.ErrSmallBuffer
	var ne net.Error
	switch {
	case errors.As(err, &small):
		problem(ctx, fasthttp.StatusRequestHeaderFieldsTooLarge, "Request Header Fields Too Large", "the request head exceeds 8 KiB")
	case errors.As(err, &ne) && ne.Timeout():
		problem(ctx, fasthttp.StatusRequestTimeout, exchange.TitleSlowHead, exchange.DetailSlowHead)
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		problem(ctx, fasthttp.StatusRequestEntityTooLarge, "Request body too large", "the request body exceeds listen.max_request_body")
	default:
		problem(ctx, fasthttp.StatusBadRequest, "Bad Request", "the request is malformed")
	}
}

// ExpectContinue is the traffic server's fasthttp.Server.ExpectHandler.
// A request announcing a body over listen.max_request_body is answered
// 413 at once, before the client sends it, instead of 100 Continue
// followed by a 413 and a reset. Others may send their body.
func (g *Server) ExpectContinue(ctx *fasthttp.RequestCtx) int {
	if max := g.Snap.Load().Cfg.Listen.MaxRequestBody; max > 0 && int64(ctx.Request.Header.ContentLength()) > max {
		problem(ctx, fasthttp.StatusRequestEntityTooLarge, "Request body too large", "the request body exceeds listen.max_request_body")
		return fasthttp.StatusRequestEntityTooLarge
	}
	return fasthttp.StatusContinue
}
