package fastpath

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/gateway/conns"
	"github.com/tollgate-dev/tollgate/gateway/exchange"
	"github.com/tollgate-dev/tollgate/gateway/observe"
	"github.com/tollgate-dev/tollgate/internal/escape"
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
	ValHTTPS      = []byte("https")
)

// hopFields is what delHop needs of a request's or a response's header.
type hopFields interface {
	PeekAll(key string) [][]byte
	DelBytes(key []byte)
	Del(key string)
}

// delHop deletes the fields named in Connection, Connection itself, then
// the standard hop-by-hop ones. Fields are looked up before deleting:
// most messages have none, and a lookup costs less than a delete.
// PeekAll, as the first line may be empty (PeekCanonical reads nil then).
func delHop[H hopFields](h H) {
	if vs := h.PeekAll("Connection"); len(vs) > 0 {
		for _, v := range vs {
			ForEachToken(v, func(name []byte) { h.DelBytes(name) })
		}
		h.DelBytes(hdrConnection)
	}
	for _, k := range hopHeaders {
		if len(h.PeekAll(k)) > 0 {
			h.Del(k)
		}
	}
}

// RemoveRequestHop deletes the hop-by-hop fields (delHop). The server has
// read the client's Connection: close already.
func RemoveRequestHop(h *fasthttp.RequestHeader) {
	delHop(h)
	if h.ContentLength() != -2 {
		// A body the upstream ends by closing (-2: no length, not
		// chunked) keeps the close: fasthttp then ends it the same way
		// for a client that cannot read chunks (HTTP/1.0).
		h.ResetConnectionClose()
	}
}

// removeResponseHop deletes the hop-by-hop fields (delHop). The
// upstream's Connection: close is about its own connection: it must not
// close the client's (fasthttp sets close again when the client asked
// for it).
func removeResponseHop(h *fasthttp.ResponseHeader) {
	// A body the upstream ends by closing (-2: no length, not chunked)
	// keeps the close: fasthttp then ends it the same way for a client
	// that cannot read chunks (HTTP/1.0). Read before deleting
	// Connection, which clears it.
	closeDelimited := h.ConnectionClose() && h.ContentLength() == -2
	delHop(h)
	if closeDelimited {
		h.SetConnectionClose()
	} else {
		h.ResetConnectionClose()
	}
}

// ForEachToken calls f with each comma-separated token of v, trimmed.
func ForEachToken(v []byte, f func([]byte)) {
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

// SetForwarded sets X-Forwarded-For to the peer's address, appended to
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
func SetForwarded(ctx *fasthttp.RequestCtx, s *exchange.Snapshot, scratch []byte) []byte {
	h := &ctx.Request.Header
	buf := scratch[:0]
	var peer netip.Addr
	if a, ok := ctx.RemoteAddr().(*net.TCPAddr); ok {
		peer = a.AddrPort().Addr().Unmap()
	}
	trusted := peer.IsValid() && s.IsTrusted(peer)
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
		proto = ValHTTPS
	}
	h.SetCanonical(hdrXFProto, proto)
	h.SetCanonical(hdrXFHost, h.Host())
	if prior := h.PeekAll("Forwarded"); len(prior) > 0 {
		if trusted {
			buf = exchange.AppendForwarded(buf[:0], prior, peer, proto)
			h.DelBytes(hdrForwarded)
			h.SetCanonical(hdrForwarded, buf)
		} else {
			h.DelBytes(hdrForwarded)
		}
	}
	return buf
}

// proxy forwards the request to rt's upstream and fills the response,
// streaming bodies both ways. start, when not zero, is a time read just
// before (it saves reading the clock again).
func (g *Server) proxy(ctx *fasthttp.RequestCtx, s *exchange.Snapshot, rt *exchange.Route, start time.Time) {
	req := &ctx.Request
	var scratch [128]byte
	RemoveRequestHop(&req.Header)
	SetForwarded(ctx, s, scratch[:0])
	SetUpstreamPath(req, rt, scratch[:0])
	SetUpstream(req, rt)
	// The upstream connection bounds the exchange by the response
	// timeout (trackedConn), more cheaply than req.SetTimeout would.
	resp := &ctx.Response
	if start.IsZero() {
		start = conns.MonoNow()
	}
	if !holdUpstream(ctx, s, rt) {
		return
	}
	if rt.Conc != nil && !rt.Conc.Acquire() {
		problem(ctx, fasthttp.StatusServiceUnavailable, "Service Unavailable", "the upstream's adaptive concurrency limit is reached")
		return
	}
	body := wrapClientBody(req, s.Cfg.Listen.MaxRequestBody)
	exchange.BeginMeters(rt)
	err := do(rt, req, resp, body)
	bodyErr := body.release()
	if len(rt.Meters) > 0 {
		exchange.EndMeters(rt, time.Since(start), resp, err, bodyErr)
	}
	if bodyErr != nil && err != nil {
		// The client's fault, not the upstream's.
		bodyError(ctx, bodyErr)
		return
	}
	if err != nil {
		rt.UpTime.Observe(time.Since(start).Seconds())
		g.upstreamError(ctx, rt, err)
		return
	}
	rt.UpTime.Observe(time.Since(start).Seconds())
	if resp.IsBodyStream() {
		// The headers came in time; the body may take as long as it
		// needs (a large download over a slow link).
		if n := resp.Header.ContentLength(); n < 0 || n > 64<<10 {
			g.Conns.LiftDeadline(resp.LocalAddr(), resp.RemoteAddr())
		}
	}
	rt.UpStatus[observe.StatusIndex(resp.StatusCode())].Inc()
	removeInvalidResponseFields(&resp.Header)
	removeResponseHop(&resp.Header)
}

// SetUpstreamPath prefixes the request's path with rt's base path. The
// path goes as the client sent it, encodings kept, unless it has dot
// segments: then it is the normalized path routing matched, re-encoded,
// so that it cannot climb out of the base path at the upstream. As with
// nginx's proxy_pass to a URI, that normalized path has its encoded
// slashes decoded: /x/../a%2Fb goes up as /a/b. Keeping %2F there would
// let /a%2F..%2F..%2Fadmin climb out at an upstream that decodes %2F
// before it resolves dot segments. OPTIONS * goes as "*", not "/base*".
func SetUpstreamPath(req *fasthttp.Request, rt *exchange.Route, scratch []byte) {
	uri := req.URI()
	raw := uri.PathOriginal()
	if len(raw) == 1 && raw[0] == '*' {
		// OPTIONS * (asterisk-form, RFC 9112 §3.2.4) asks about the
		// server, not a resource: it goes as it came.
		return
	}
	dots := exchange.HasDotSegment(raw)
	if rt.BasePath == "" && !dots {
		return
	}
	p := append(scratch[:0], rt.BasePath...)
	if dots {
		p = escape.AppendPath(p, uri.Path())
	} else {
		p = append(p, raw...)
	}
	uri.SetPathBytes(p)
}

// SetUpstream points the request's URI and Host at rt's upstream, and
// makes it an HTTP/1.1 request: an intermediary sends its own version
// (RFC 9110 §6.2), not the client's (1.0, or 0.0, 1.9 as fasthttp reads
// them).
func SetUpstream(req *fasthttp.Request, rt *exchange.Route) {
	if !req.Header.IsHTTP11() {
		req.Header.SetProtocol("HTTP/1.1")
	}
	uri := req.URI()
	if rt.TLS {
		uri.SetScheme("https")
	} else {
		uri.SetScheme("http")
	}
	uri.SetHost(rt.HostHdr)
	req.Header.SetHost(rt.HostHdr)
}

// upstreamError answers 504 for a timeout, 503 when the upstream's
// connection limit is reached, and 502 otherwise.
func (g *Server) upstreamError(ctx *fasthttp.RequestCtx, rt *exchange.Route, err error) {
	switch {
	case exchange.IsTimeout(err):
		rt.UpStatus[observe.IdxTimeout].Inc()
		problem(ctx, fasthttp.StatusGatewayTimeout, "Gateway Timeout", "the upstream did not answer in time")
	case errors.Is(err, fasthttp.ErrNoFreeConns):
		rt.UpStatus[observe.IdxError].Inc()
		problem(ctx, fasthttp.StatusServiceUnavailable, "Service Unavailable", "the upstream connection limit is reached")
	default:
		rt.UpStatus[observe.IdxError].Inc()
		problem(ctx, fasthttp.StatusBadGateway, "Bad Gateway", "the upstream could not be reached")
	}
	if g.Warns == nil { // not started: a test serving directly
		g.Log.Warn("upstream error", "route", rt.Name, "err", err)
		return
	}
	// One line per failed request would flood the log while an
	// upstream is down: a few per route, then a count.
	g.Warns.Warn("upstream error "+rt.Name, "upstream error", slog.String("route", rt.Name), slog.Any("err", err))
}

// do is the exchange with the upstream; with adaptive_concurrency it
// holds the place acquire took and gives it back however Do ends, with
// the time the upstream took to answer, or without a sample when the
// exchange did not end by the upstream's doing (originsOutcome: the
// client's body, its own failure, ended it).
func do(rt *exchange.Route, req *fasthttp.Request, resp *fasthttp.Response, body *clientBody) (err error) {
	if rt.Conc == nil {
		return rt.Client.Do(req, resp)
	}
	began := time.Now()
	defer func() {
		if err != nil && !exchange.OriginsOutcome(err, body.failed()) {
			rt.Conc.Cancel()
			return
		}
		rt.Conc.Release(began)
	}()
	return rt.Client.Do(req, resp)
}
