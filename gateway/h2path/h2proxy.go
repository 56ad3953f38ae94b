package h2path

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/gateway/conns"
	"github.com/tollgate-dev/tollgate/gateway/exchange"
	"github.com/tollgate-dev/tollgate/gateway/observe"
	"github.com/tollgate-dev/tollgate/httplimit"
	"github.com/tollgate-dev/tollgate/internal/escape"
	"github.com/tollgate-dev/tollgate/rules"
)

// h2Exchange is one request's state on the net/http path, from the
// decision to the upstream's response. ReverseProxy's hooks find it in
// the request's context.
type h2Exchange struct {
	s       *exchange.Snapshot
	rt      *exchange.Route
	rawPath string // the target's path as the client sent it
	res     rules.Result
	start   time.Time
	// metering: the exchange is counted in rt's meters until it ends
	// (exchange.endMeters); send bounds the writes of an HTTP/2
	// stream's response (listen.send_timeout).
	metering bool
	send     conns.StreamSend
	// timer cancels the upstream exchange when its response headers take
	// longer than upstream.response_timeout; timedOut says it did.
	timer    *time.Timer
	timedOut atomic.Bool
	// body is the client's request body on its way upstream, when it
	// has one.
	body h2Body
	// charged: the counting rules have been charged with the answer.
	charged bool
}

// charge charges ex's counting rules with the answer to r (status, its
// header fields h), once: httplimit.Charge.
func (ex *h2Exchange) charge(r *http.Request, status int, h http.Header) {
	if ex.charged {
		return
	}
	ex.charged = true
	httplimit.Charge(r, &ex.res, status, h) //nolint:errcheck // the engine logs a store error
}

// h2Body is a request body on the net/http path on its way from the
// client to the upstream. It remembers why reading it from the client
// failed (broken chunked framing, a body cut short, a stall past
// listen.read_timeout, the size limit), so that the gateway answers for
// the client's fault (clientBodyFault) instead of reporting an upstream
// error; the upstream, whose request body stopped short, sees its
// exchange fail. The transport reads it on its own goroutine while the
// handler's may ask why it failed: the error is kept atomically.
type h2Body struct {
	rc     io.ReadCloser
	err    atomic.Pointer[error]
	closed atomic.Bool
}

// Read passes the client's body on and notes why it failed, if it does.
func (b *h2Body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF && !b.closed.Load() && b.err.Load() == nil {
		b.err.Store(&err)
	}
	return n, err
}

// Close closes the client's body; reads after it fail without being the
// client's fault.
func (b *h2Body) Close() error {
	b.closed.Store(true)
	return b.rc.Close()
}

// failed is why reading the client's body failed, or nil.
func (b *h2Body) failed() error {
	if e := b.err.Load(); e != nil {
		return *e
	}
	return nil
}

type exchangeKey struct{}

func exchangeOf(r *http.Request) *h2Exchange {
	ex, _ := r.Context().Value(exchangeKey{}).(*h2Exchange)
	return ex
}

// proxyH2 forwards r to ex.rt's upstream through its ReverseProxy:
// bodies stream both ways, trailers pass, nothing is buffered whole.
func (g *Server) proxyH2(w http.ResponseWriter, r *http.Request, ex *h2Exchange) {
	hold, ok := holdUpstreamH2(w, r, ex.s, ex.rt)
	if !ok {
		ex.charge(r, http.StatusServiceUnavailable, nil) // its answer, as on HTTP/1.1
		return
	}
	defer hold.Release()
	if r.ProtoMajor == 2 {
		// A stream's writes are bounded by send_timeout here, one by
		// one; HTTP/1.1's are by its connection (yieldConn.Write).
		ex.send.Start(w, ex.s.Cfg.Listen.SendTimeout)
		w = &ex.send
	}
	if len(ex.rt.Meters) > 0 {
		exchange.BeginMeters(ex.rt)
		ex.metering = true
		// Neither hook ran (a panic): not the upstream's doing.
		defer ex.endMeters(nil, true)
	}
	ctx, cancel := context.WithCancel(context.WithValue(r.Context(), exchangeKey{}, ex))
	defer cancel()
	if t := ex.s.Cfg.Upstream.ResponseTimeout; t > 0 {
		ex.timer = time.AfterFunc(t, func() {
			ex.timedOut.Store(true)
			cancel()
		})
		defer ex.timer.Stop()
	}
	if r.Body != nil && r.Body != http.NoBody {
		ex.body.rc = r.Body
		r.Body = &ex.body
	}
	ex.start = conns.MonoNow()
	ex.rt.H2Proxy.ServeHTTP(w, r.WithContext(ctx))
	ex.charge(r, 0, nil) // neither hook charged: no answer came
}

// NewH2Proxy returns rt's ReverseProxy over transport.
func (g *Server) NewH2Proxy(rt *exchange.Route, transport http.RoundTripper) *httputil.ReverseProxy {
	p := &httputil.ReverseProxy{
		Rewrite:        rewriteH2,
		Transport:      transport,
		ModifyResponse: modifyH2,
		ErrorHandler:   g.proxyErrorH2,
		BufferPool:     proxyBuffers,
		ErrorLog:       g.netHTTPLogger(),
	}
	// No FlushInterval, on a gRPC route either: ReverseProxy flushes
	// every write of a response of unknown length (ContentLength -1),
	// which every gRPC response with messages is, so a stream's messages
	// go as they come. A trailers-only answer (grpc-status in the
	// response's header fields, END_STREAM on them: ContentLength 0)
	// must go out as it came, one HEADERS frame ending the stream: with
	// FlushInterval -1 ReverseProxy's first flush, on a timer of its
	// own, raced the handler's end, and when it won the header went
	// without END_STREAM and the client read a stream that closed
	// without trailers (grpc-go: Internal, "server closed the stream
	// without sending trailers") in place of the upstream's status.
	return p
}

// rewriteH2 points the outbound request at the route's upstream, with
// the HTTP/1.1 path's rules for its path (setUpstreamPath) and its
// X-Forwarded-* and Forwarded fields (setForwarded). ReverseProxy has
// removed the hop-by-hop fields (keeping TE: trailers) and the incoming
// X-Forwarded-*/Forwarded ones from pr.Out.
func rewriteH2(pr *httputil.ProxyRequest) {
	ex := exchangeOf(pr.In)
	rt, out := ex.rt, pr.Out
	if rt.TLS {
		out.URL.Scheme = "https"
	} else {
		out.URL.Scheme = "http"
	}
	out.URL.Host = rt.Addr
	out.Host = rt.HostHdr
	setUpstreamPathH2(out.URL, pr.In.URL.Path, ex.rawPath, rt.BasePath)
	setForwardedH2(pr.In, out, ex.s)
}

// setUpstreamPathH2 sets u's path to base followed by the client's raw
// path, or, when that has dot segments, by the resolved path routing
// matched (clean), re-encoded: setUpstreamPath's rule.
func setUpstreamPathH2(u *url.URL, clean, raw, base string) {
	if raw == "*" {
		u.Path, u.RawPath = "*", ""
		return
	}
	p := raw
	if exchange.HasDotSegment([]byte(raw)) {
		p = string(escape.AppendPath([]byte(base), clean))
	} else if base != "" {
		p = base + raw
	}
	if strings.IndexByte(p, '%') < 0 {
		u.Path, u.RawPath = p, ""
		return
	}
	dec, err := url.PathUnescape(p)
	if err != nil {
		dec = p
	}
	u.Path, u.RawPath = dec, p
}

// setForwardedH2 is setForwarded for net/http headers: X-Forwarded-For
// is the peer, appended to the incoming list only from a trusted proxy;
// X-Forwarded-Proto and -Host are this hop's; X-Real-IP is kept and
// Forwarded is kept with this hop's element appended only from a trusted
// proxy.
func setForwardedH2(in, out *http.Request, s *exchange.Snapshot) {
	var peer netip.Addr
	if ap, err := netip.ParseAddrPort(in.RemoteAddr); err == nil {
		peer = ap.Addr().Unmap()
	}
	trusted := peer.IsValid() && s.IsTrusted(peer)
	h := out.Header
	var scratch [128]byte
	buf := scratch[:0]
	if trusted {
		for _, v := range in.Header["X-Forwarded-For"] {
			if v != "" {
				buf = append(buf, v...)
				buf = append(buf, ", "...)
			}
		}
	}
	if peer.IsValid() {
		buf = peer.AppendTo(buf)
	}
	h["X-Forwarded-For"] = []string{string(buf)}
	proto := "http"
	if in.TLS != nil {
		proto = "https"
	}
	h["X-Forwarded-Proto"] = []string{proto}
	h["X-Forwarded-Host"] = []string{in.Host}
	if !trusted {
		delete(h, "X-Real-Ip")
		return
	}
	if prior := in.Header["Forwarded"]; len(prior) > 0 {
		lines := make([][]byte, len(prior))
		for i, v := range prior {
			lines[i] = []byte(v)
		}
		h["Forwarded"] = []string{string(exchange.AppendForwarded(buf[:0], lines, peer, []byte(proto)))}
	}
}

// modifyH2 runs when the upstream's response headers have come: the
// response timeout no longer applies, and the rate-limit fields replace
// any of the same name the upstream wrote (as on the HTTP/1.1 path).
func modifyH2(resp *http.Response) error {
	ex := exchangeOf(resp.Request)
	if ex == nil {
		return nil
	}
	if ex.timer != nil {
		ex.timer.Stop()
	}
	if err := ex.body.failed(); err != nil {
		// The client's body failed before the upstream answered: the
		// client gets its fault's answer (upstreamErrorH2), not the
		// answer to a request the upstream never saw whole.
		return err
	}
	rt := ex.rt
	rt.UpTime.Observe(time.Since(ex.start).Seconds())
	rt.UpStatus[observe.StatusIndex(resp.StatusCode)].Inc()
	ex.endMeters(resp, false)
	// A counting rule is charged with the upstream's status and fields
	// (on a gRPC route its HTTP status, and a trailers-only answer's
	// grpc-status among the fields) as they arrive, before they go on
	// to the client.
	ex.charge(resp.Request, resp.StatusCode, resp.Header)
	if ex.res.Matched() {
		httplimit.SetHeaders(resp.Header, &ex.res)
	}
	return nil
}

// upstreamErrorH2 answers a failed upstream exchange: for the client's
// fault when reading its body failed (clientBodyFault: 413, 408 or 400,
// not counted against the upstream), 504 for a timeout, 502 otherwise;
// on a gRPC route, the gRPC statuses DEADLINE_EXCEEDED and UNAVAILABLE.
// A client that went away is answered nothing.
func (g *Server) upstreamErrorH2(w http.ResponseWriter, r *http.Request, err error) {
	ex := exchangeOf(r)
	rt := ex.rt
	if berr := ex.body.failed(); berr != nil {
		// Before the context check: on HTTP/1.1, net/http cancels the
		// request's context when reading the connection fails, yet the
		// client is there to read the answer.
		status, title, detail := exchange.ClientBodyFault(berr)
		if status != http.StatusRequestEntityTooLarge && r.ProtoMajor == 1 {
			// Somewhere inside a body it cannot frame (as bodyError).
			w.Header().Set("Connection", "close")
		}
		ex.charge(r, status, nil)
		problemH2(w, r, status, title, detail)
		return
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		ex.charge(r, http.StatusRequestEntityTooLarge, nil)
		problemH2(w, r, http.StatusRequestEntityTooLarge, "Request body too large", "the request body exceeds listen.max_request_body")
		return
	}
	timedOut := ex.timedOut.Load()
	if !timedOut && r.Context().Err() != nil {
		// The client reset the stream or closed the connection: no
		// answer.
		ex.charge(r, 0, nil)
		return
	}
	// Charged as what the gateway answers: 504 or 502, on a gRPC route
	// too (whose answer is HTTP 200 with DEADLINE_EXCEEDED or
	// UNAVAILABLE), as the HTTP/1.1 path answers.
	if timedOut || exchange.IsTimeout(err) {
		ex.charge(r, http.StatusGatewayTimeout, nil)
	} else {
		ex.charge(r, http.StatusBadGateway, nil)
	}
	rt.UpTime.Observe(time.Since(ex.start).Seconds())
	if ex.res.Matched() {
		httplimit.SetHeaders(w.Header(), &ex.res)
	}
	if timedOut || exchange.IsTimeout(err) {
		rt.UpStatus[observe.IdxTimeout].Inc()
		if rt.GRPC {
			writeGRPCStatus(w, grpcDeadlineExceeded, "the upstream did not answer in time")
		} else {
			problemH2(w, r, http.StatusGatewayTimeout, "Gateway Timeout", "the upstream did not answer in time")
		}
	} else {
		rt.UpStatus[observe.IdxError].Inc()
		if rt.GRPC {
			writeGRPCStatus(w, grpcUnavailable, "the upstream could not be reached")
		} else {
			problemH2(w, r, http.StatusBadGateway, "Bad Gateway", "the upstream could not be reached")
		}
	}
	if g.Warns == nil {
		g.Log.Warn("upstream error", "route", rt.Name, "err", err)
		return
	}
	g.Warns.Warn("upstream error "+rt.Name, "upstream error", slog.String("route", rt.Name), slog.Any("err", err))
}

// proxyBuffers are ReverseProxy's copy buffers, 32 KiB each, reused.
var proxyBuffers = &bufferPool{pool: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}

type bufferPool struct{ pool sync.Pool }

// Get returns a buffer.
func (p *bufferPool) Get() []byte { return *p.pool.Get().(*[]byte) }

// Put returns b for reuse.
func (p *bufferPool) Put(b []byte) { p.pool.Put(&b) }

// Transport returns the shared http.Transport for an upstream with these
// settings, so that a reload keeps warm connections: HTTP/1.1, h2 (TLS,
// by ALPN) or h2c (prior knowledge), net/http's own HTTP/2. It is called
// (under the reload lock) from the gateway's build.
func (g *Server) Transport(u config.Upstream, addr, protocol string, isTLS bool) http.RoundTripper {
	g.mu.Lock()
	defer g.mu.Unlock()
	key := fmt.Sprintf("%s|%s|%t|%v|%v|%d", addr, protocol, isTLS, u.DialTimeout, u.IdleConnTimeout, u.MaxConns)
	if t, ok := g.transports[key]; ok {
		return t
	}
	dialer := &net.Dialer{Timeout: u.DialTimeout, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		DialContext:            dialer.DialContext,
		TLSHandshakeTimeout:    u.DialTimeout,
		IdleConnTimeout:        u.IdleConnTimeout,
		DisableCompression:     true,
		MaxResponseHeaderBytes: exchange.MaxResponseHead,
		Protocols:              new(http.Protocols),
	}
	switch {
	case protocol == config.ProtocolHTTP2 && isTLS:
		t.Protocols.SetHTTP2(true) // h2 by ALPN, nothing else
	case protocol == config.ProtocolHTTP2:
		t.Protocols.SetUnencryptedHTTP2(true) // h2c, prior knowledge
	default:
		t.Protocols.SetHTTP1(true)
		t.MaxConnsPerHost = u.MaxConns
		t.MaxIdleConns = u.MaxConns
		t.MaxIdleConnsPerHost = u.MaxConns
	}
	if g.transports == nil {
		g.transports = map[string]http.RoundTripper{}
	}
	g.transports[key] = t
	return t
}

// CloseTransports closes the transports' idle connections.
func (g *Server) CloseTransports() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, t := range g.transports {
		if c, ok := t.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	}
}
