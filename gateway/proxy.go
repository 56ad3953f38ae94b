package gateway

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// hopHeaders are the hop-by-hop fields (RFC 9110 §7.6.1) a proxy must not
// forward, besides those the Connection field names, in canonical form.
// fasthttp handles Connection and Transfer-Encoding itself.
var hopHeaders = [][]byte{
	[]byte("Keep-Alive"), []byte("Proxy-Connection"), []byte("Proxy-Authenticate"),
	[]byte("Proxy-Authorization"), []byte("Te"), []byte("Trailer"), []byte("Upgrade"),
}

var (
	hdrConnection = []byte("Connection")
	hdrXFF        = []byte("X-Forwarded-For")
	hdrXFProto    = []byte("X-Forwarded-Proto")
	hdrXFHost     = []byte("X-Forwarded-Host")
	valHTTP       = []byte("http")
	valHTTPS      = []byte("https")
)

// removeRequestHop deletes the fields named in Connection, then the
// standard hop-by-hop ones. Fields are looked up before deleting: most
// requests have none, and a lookup costs less than a delete.
func removeRequestHop(h *fasthttp.RequestHeader) {
	if h.PeekCanonical(hdrConnection) != nil {
		for _, v := range h.PeekAll("Connection") {
			forEachToken(v, func(name []byte) { h.DelBytes(name) })
		}
	}
	for _, k := range hopHeaders {
		if h.PeekCanonical(k) != nil {
			h.DelBytes(k)
		}
	}
	h.ResetConnectionClose()
}

func removeResponseHop(h *fasthttp.ResponseHeader) {
	if h.PeekCanonical(hdrConnection) != nil {
		for _, v := range h.PeekAll("Connection") {
			forEachToken(v, func(name []byte) {
				// close and keep-alive are fasthttp's own business.
				if !equalFold(name, "close") && !equalFold(name, "keep-alive") {
					h.DelBytes(name)
				}
			})
		}
	}
	for _, k := range hopHeaders {
		if h.PeekCanonical(k) != nil {
			h.DelBytes(k)
		}
	}
}

// forEachToken calls f with each comma-separated token of v, trimmed.
func forEachToken(v []byte, f func([]byte)) {
	for len(v) > 0 {
		i := 0
		for i < len(v) && v[i] != ',' {
			i++
		}
		tok := v[:i]
		for len(tok) > 0 && (tok[0] == ' ' || tok[0] == '\t') {
			tok = tok[1:]
		}
		for len(tok) > 0 && (tok[len(tok)-1] == ' ' || tok[len(tok)-1] == '\t') {
			tok = tok[:len(tok)-1]
		}
		if len(tok) > 0 {
			f(tok)
		}
		if i == len(v) {
			break
		}
		v = v[i+1:]
	}
}

// setForwarded sets X-Forwarded-For to the peer's address, appended to
// the incoming list only when the peer is a trusted proxy (a client's own
// X-Forwarded-For is dropped, so an upstream reading the list cannot be
// fooled by it), and sets X-Forwarded-Proto and X-Forwarded-Host,
// replacing any value the client sent.
func setForwarded(ctx *fasthttp.RequestCtx, s *snapshot, scratch []byte) []byte {
	h := &ctx.Request.Header
	buf := scratch[:0]
	var peer netip.Addr
	if a, ok := ctx.RemoteAddr().(*net.TCPAddr); ok {
		peer = a.AddrPort().Addr().Unmap()
	}
	if prior := h.PeekCanonical(hdrXFF); len(prior) > 0 && peer.IsValid() && s.isTrusted(peer) {
		buf = append(buf, prior...)
		buf = append(buf, ", "...)
	}
	if peer.IsValid() {
		buf = peer.AppendTo(buf)
	}
	h.SetCanonical(hdrXFF, buf)
	if ctx.IsTLS() {
		h.SetCanonical(hdrXFProto, valHTTPS)
	} else {
		h.SetCanonical(hdrXFProto, valHTTP)
	}
	h.SetCanonical(hdrXFHost, h.Host())
	return buf
}

// proxy forwards the request to rt's upstream and fills the response,
// streaming bodies both ways. start, when not zero, is a time read just
// before (it saves reading the clock again).
func (g *Gateway) proxy(ctx *fasthttp.RequestCtx, s *snapshot, rt *route, start time.Time) {
	req := &ctx.Request
	var scratch [128]byte
	removeRequestHop(&req.Header)
	setForwarded(ctx, s, scratch[:0])
	if rt.basePath != "" {
		uri := req.URI()
		p := append(scratch[:0], rt.basePath...)
		p = append(p, uri.PathOriginal()...)
		uri.SetPathBytes(p)
	}
	setUpstream(req, rt)
	// The upstream connection bounds the exchange by the response
	// timeout (trackedConn), more cheaply than req.SetTimeout would.
	resp := &ctx.Response
	if start.IsZero() {
		start = monoNow()
	}
	err := rt.client.Do(req, resp)
	if err != nil {
		rt.upTime.Observe(time.Since(start).Seconds())
		g.upstreamError(ctx, rt, err)
		return
	}
	rt.upTime.Observe(time.Since(start).Seconds())
	if resp.IsBodyStream() {
		// The headers came in time; the body may take as long as it
		// needs (a large download over a slow link).
		if n := resp.Header.ContentLength(); n < 0 || n > 64<<10 {
			g.conns.liftDeadline(resp.LocalAddr(), resp.RemoteAddr())
		}
	}
	rt.upStatus[statusIndex(resp.StatusCode())].Inc()
	removeResponseHop(&resp.Header)
}

// setUpstream points the request's URI and Host at rt's upstream.
func setUpstream(req *fasthttp.Request, rt *route) {
	uri := req.URI()
	if rt.tls {
		uri.SetScheme("https")
	} else {
		uri.SetScheme("http")
	}
	uri.SetHost(rt.hostHdr)
	req.Header.SetHost(rt.hostHdr)
}

// upstreamError answers 504 for a timeout, 503 when the upstream's
// connection limit is reached, and 502 otherwise.
func (g *Gateway) upstreamError(ctx *fasthttp.RequestCtx, rt *route, err error) {
	switch {
	case isTimeout(err):
		rt.upStatus[idxTimeout].Inc()
		problem(ctx, fasthttp.StatusGatewayTimeout, "Gateway Timeout", "the upstream did not answer in time")
	case errors.Is(err, fasthttp.ErrNoFreeConns):
		rt.upStatus[idxError].Inc()
		problem(ctx, fasthttp.StatusServiceUnavailable, "Service Unavailable", "the upstream connection limit is reached")
	default:
		rt.upStatus[idxError].Inc()
		problem(ctx, fasthttp.StatusBadGateway, "Bad Gateway", "the upstream could not be reached")
	}
	g.log.Warn("upstream error", "route", rt.name, "err", err)
}

func isTimeout(err error) bool {
	if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) ||
		errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
