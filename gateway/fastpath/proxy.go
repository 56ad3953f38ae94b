package fastpath

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/tollgate-dev/tollgate/internal/escape"
	"github.com/valyala/fasthttp"
)

// hopHeaders are the hop-by-hop fields (RFC 9110 §7.6.1) a proxy must not
// forward, besides Connection and those it names, in canonical form.
// fasthttp handles Transfer-Encoding itself.
var hopHeaders = []string{
	"Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Upgrade",
}

var (
	hdrConnection = []byte("Connection")
	hdrXFF        = []byte("X-Forwarded-For")
	hdrXFProto    = []byte("X-Forwarded-Proto")
	hdrXFHost     = []byte("X-Forwarded-Host")
	hdrXRealIP    = []byte("X-Real-Ip")
	hdrForwarded  = []byte("Forwarded")
	valHTTP       = []byte("http")
	valHTTPS      = []byte("https")
)

// removeRequestHop deletes the fields named in Connection, Connection
// itself, then the standard hop-by-hop ones. Fields are looked up before
// deleting: most requests have none, and a lookup costs less than a
// delete. PeekAll, as the first line may be empty (PeekCanonical reads
// nil then). The server has read the client's Connection: close already.
func removeRequestHop(h *fasthttp.RequestHeader) {
	if vs := h.PeekAll("Connection"); len(vs) > 0 {
		for _, v := range vs {
			forEachToken(v, func(name []byte) { h.DelBytes(name) })
		}
		h.DelBytes(hdrConnection)
	}
	for _, k := range hopHeaders {
		if len(h.PeekAll(k)) > 0 {
			h.Del(k)
		}
	}
	if h.ContentLength() != -2 {
		// A body the upstream ends by closing (-2: no length, not
		// chunked) keeps the close: fasthttp then ends it the same way
		// for a client that cannot read chunks (HTTP/1.0).
		h.ResetConnectionClose()
	}
}

// removeResponseHop deletes the fields named in Connection, Connection
// itself, then the standard hop-by-hop ones. The upstream's Connection:
// close is about its own connection: it must not close the client's
// (fasthttp sets close again when the client asked for it).
func removeResponseHop(h *fasthttp.ResponseHeader) {
	// A body the upstream ends by closing (-2: no length, not chunked)
	// keeps the close: fasthttp then ends it the same way for a client
	// that cannot read chunks (HTTP/1.0). Read before deleting
	// Connection, which clears it.
	closeDelimited := h.ConnectionClose() && h.ContentLength() == -2
	if vs := h.PeekAll("Connection"); len(vs) > 0 {
		for _, v := range vs {
			forEachToken(v, func(name []byte) { h.DelBytes(name) })
		}
		h.DelBytes(hdrConnection)
	}
	for _, k := range hopHeaders {
		if len(h.PeekAll(k)) > 0 {
			h.Del(k)
		}
	}
	if closeDelimited {
		h.SetConnectionClose()
	} else {
		h.ResetConnectionClose()
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
// the incoming list (all its lines) only when the peer is a trusted proxy
// (a client's own X-Forwarded-For is dropped, so an upstream reading the
// list cannot be fooled by it), and sets X-Forwarded-Proto and
// X-Forwarded-Host, replacing every line the client sent.
//
// Forwarded (RFC 7239) and X-Real-IP, the other fields an upstream may
// read the client's address from, get the same trust: from an untrusted
// peer they are removed; from a trusted proxy X-Real-IP is kept and
// Forwarded is kept with this hop's element appended, as X-Forwarded-For
// is. The gateway adds neither field when none came.
func setForwarded(ctx *fasthttp.RequestCtx, s *snapshot, scratch []byte) []byte {
	h := &ctx.Request.Header
	buf := scratch[:0]
	var peer netip.Addr
	if a, ok := ctx.RemoteAddr().(*net.TCPAddr); ok {
		peer = a.AddrPort().Addr().Unmap()
	}
	trusted := peer.IsValid() && s.isTrusted(peer)
	if prior := h.PeekAll("X-Forwarded-For"); len(prior) > 0 {
		if trusted {
			for _, v := range prior {
				if len(v) > 0 {
					buf = append(buf, v...)
					buf = append(buf, ", "...)
				}
			}
		}
		h.DelBytes(hdrXFF)
	}
	// Lines after the first would survive SetCanonical.
	if len(h.PeekAll("X-Forwarded-Proto")) > 0 {
		h.DelBytes(hdrXFProto)
	}
	if len(h.PeekAll("X-Forwarded-Host")) > 0 {
		h.DelBytes(hdrXFHost)
	}
	if !trusted && len(h.PeekAll("X-Real-Ip")) > 0 {
		h.DelBytes(hdrXRealIP)
	}
	if peer.IsValid() {
		buf = peer.AppendTo(buf)
	}
	h.SetCanonical(hdrXFF, buf)
	proto := valHTTP
	if ctx.IsTLS() {
		proto = valHTTPS
	}
	h.SetCanonical(hdrXFProto, proto)
	h.SetCanonical(hdrXFHost, h.Host())
	if prior := h.PeekAll("Forwarded"); len(prior) > 0 {
		if trusted {
			buf = appendForwarded(buf[:0], prior, peer, proto)
			h.DelBytes(hdrForwarded)
			h.SetCanonical(hdrForwarded, buf)
		} else {
			h.DelBytes(hdrForwarded)
		}
	}
	return buf
}

// appendForwarded appends the Forwarded lines prior, joined, then this
// hop's element: for= the peer (an IPv6 address quoted in brackets, as
// RFC 7239 §6 writes it) and proto=.
func appendForwarded(dst []byte, prior [][]byte, peer netip.Addr, proto []byte) []byte {
	for _, v := range prior {
		if len(v) > 0 {
			dst = append(dst, v...)
			dst = append(dst, ", "...)
		}
	}
	dst = append(dst, "for="...)
	if peer.Is6() {
		dst = append(dst, `"[`...)
		dst = peer.AppendTo(dst)
		dst = append(dst, `]"`...)
	} else {
		dst = peer.AppendTo(dst)
	}
	dst = append(dst, ";proto="...)
	return append(dst, proto...)
}

// proxy forwards the request to rt's upstream and fills the response,
// streaming bodies both ways. start, when not zero, is a time read just
// before (it saves reading the clock again).
func (g *Gateway) proxy(ctx *fasthttp.RequestCtx, s *snapshot, rt *route, start time.Time) {
	req := &ctx.Request
	var scratch [128]byte
	removeRequestHop(&req.Header)
	setForwarded(ctx, s, scratch[:0])
	setUpstreamPath(req, rt, scratch[:0])
	setUpstream(req, rt)
	// The upstream connection bounds the exchange by the response
	// timeout (trackedConn), more cheaply than req.SetTimeout would.
	resp := &ctx.Response
	if start.IsZero() {
		start = monoNow()
	}
	if !holdUpstream(ctx, s, rt) {
		return
	}
	if rt.conc != nil && !rt.conc.acquire() {
		problem(ctx, fasthttp.StatusServiceUnavailable, "Service Unavailable", "the upstream's adaptive concurrency limit is reached")
		return
	}
	body := wrapClientBody(req, s.cfg.Listen.MaxRequestBody)
	beginMeters(rt)
	err := do(rt, req, resp, body)
	bodyErr := body.release()
	if len(rt.meters) > 0 {
		endMeters(rt, time.Since(start), resp, err, bodyErr)
	}
	if bodyErr != nil && err != nil {
		// The client's fault, not the upstream's.
		bodyError(ctx, bodyErr)
		return
	}
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
	removeInvalidResponseFields(&resp.Header)
	removeResponseHop(&resp.Header)
}

// setUpstreamPath prefixes the request's path with rt's base path. The
// path goes as the client sent it, encodings kept, unless it has dot
// segments: then it is the normalized path routing matched, re-encoded,
// so that it cannot climb out of the base path at the upstream. As with
// nginx's proxy_pass to a URI, that normalized path has its encoded
// slashes decoded: /x/../a%2Fb goes up as /a/b. Keeping %2F there would
// let /a%2F..%2F..%2Fadmin climb out at an upstream that decodes %2F
// before it resolves dot segments. OPTIONS * goes as "*", not "/base*".
func setUpstreamPath(req *fasthttp.Request, rt *route, scratch []byte) {
	uri := req.URI()
	raw := uri.PathOriginal()
	if len(raw) == 1 && raw[0] == '*' {
		// OPTIONS * (asterisk-form, RFC 9112 §3.2.4) asks about the
		// server, not a resource: it goes as it came.
		return
	}
	dots := hasDotSegment(raw)
	if rt.basePath == "" && !dots {
		return
	}
	p := append(scratch[:0], rt.basePath...)
	if dots {
		p = escape.AppendPath(p, uri.Path())
	} else {
		p = append(p, raw...)
	}
	uri.SetPathBytes(p)
}

// hasDotSegment reports whether the raw path has a "." or ".." segment
// once percent-decoded (%2e is a dot, %2f a slash).
func hasDotSegment(raw []byte) bool {
	if bytes.IndexByte(raw, '.') < 0 && bytes.IndexByte(raw, '%') < 0 {
		return false
	}
	dots := 0 // dots in the segment so far; -1 once it has anything else
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == '%' && i+2 < len(raw) {
			if h, l := escape.Unhex(raw[i+1]), escape.Unhex(raw[i+2]); h >= 0 && l >= 0 {
				c = byte(h<<4 | l)
				i += 2
			}
		}
		switch {
		case c == '/':
			if dots == 1 || dots == 2 {
				return true
			}
			dots = 0
		case c == '.' && dots >= 0:
			dots++
		default:
			dots = -1
		}
	}
	return dots == 1 || dots == 2
}

// setUpstream points the request's URI and Host at rt's upstream, and
// makes it an HTTP/1.1 request: an intermediary sends its own version
// (RFC 9110 §6.2), not the client's (1.0, or 0.0, 1.9 as fasthttp reads
// them).
func setUpstream(req *fasthttp.Request, rt *route) {
	if !req.Header.IsHTTP11() {
		req.Header.SetProtocol("HTTP/1.1")
	}
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
	if g.warns == nil { // not started: a test serving directly
		g.log.Warn("upstream error", "route", rt.name, "err", err)
		return
	}
	// One line per failed request would flood the log while an
	// upstream is down: a few per route, then a count.
	g.warns.Warn("upstream error "+rt.name, "upstream error", slog.String("route", rt.name), slog.Any("err", err))
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

// do is the exchange with the upstream; with adaptive_concurrency it
// holds the place acquire took and gives it back however Do ends, with
// the time the upstream took to answer, or without a sample when the
// exchange did not end by the upstream's doing (originsOutcome: the
// client's body, its own failure, ended it).
func do(rt *route, req *fasthttp.Request, resp *fasthttp.Response, body *clientBody) (err error) {
	if rt.conc == nil {
		return rt.client.Do(req, resp)
	}
	began := time.Now()
	defer func() {
		if err != nil && !originsOutcome(err, body.failed()) {
			rt.conc.cancel()
			return
		}
		rt.conc.release(began)
	}()
	return rt.client.Do(req, resp)
}
