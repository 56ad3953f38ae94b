package h2path

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/gateway/conns"
	"github.com/tollgate-dev/tollgate/gateway/exchange"
	"github.com/tollgate-dev/tollgate/gateway/observe"
	"github.com/tollgate-dev/tollgate/httplimit"
	"github.com/tollgate-dev/tollgate/rules"
)

// serveH2 is the net/http data path's handler: route, decide, then
// proxy, as serve is the fasthttp path's. The rule engine, the header
// fields and the refusal are httplimit's (gRPC refusals are grpc.go's).
func (g *Server) serveH2(w http.ResponseWriter, r *http.Request) {
	g.InFlight.Add(1)
	defer g.InFlight.Add(-1)
	s := g.Snap.Load()
	if headerListSize(r) > s.Cfg.Listen.MaxHeaderListSize {
		if r.ProtoMajor == 1 {
			w.Header().Set("Connection", "close")
		}
		problemH2(w, r, http.StatusRequestHeaderFieldsTooLarge, "Request Header Fields Too Large", "the request's header list exceeds listen.max_header_list_size")
		return
	}
	var ent *observe.Entry
	if s.LogAccess && g.Access != nil {
		aw := &observe.AccessWriter{ResponseWriter: w}
		ent = g.Access.BeginH2(r, &s.AccessQuery)
		defer g.Access.FinishH2(ent, r, aw)
		w = aw
	}
	// Routing and the rules see the path with its dot segments
	// resolved, as fasthttp's normalized path on the HTTP/1.1 path; the
	// upstream gets the path as sent unless it had some (h2proxy.go).
	raw := requestPath(r)
	if p := rules.CleanPath(r.URL.Path); p != r.URL.Path {
		r.URL.Path = p
	}
	if up := r.Header["Upgrade"]; len(up) == 1 && strings.EqualFold(up[0], "h2c") {
		// The HTTP/1.1 request that upgraded its connection to h2c
		// (h2c's handler takes every other one), answered over
		// HTTP/2: its Upgrade, Connection and HTTP2-Settings fields
		// were for this hop and are not forwarded (ReverseProxy would
		// start an upgrade upstream).
		r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/2.0", 2, 0
		delete(r.Header, "Upgrade")
		delete(r.Header, "Connection")
		delete(r.Header, "Http2-Settings")
	}
	rt := s.Match([]byte(r.Host), []byte(r.URL.Path))
	g.countProtocol(r, rt)
	if rt == nil {
		problemH2(w, r, http.StatusNotFound, "No route", "no route matches this host and path")
		return
	}
	if rt.GRPC && !g.checkGRPC(w, r) {
		return
	}
	if max := s.Cfg.Listen.MaxRequestBody; max > 0 {
		if r.ContentLength > max {
			problemH2(w, r, http.StatusRequestEntityTooLarge, "Request body too large", "the request body exceeds listen.max_request_body")
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, max)
		}
	}
	// Decided into a local Result: a refusal allocates no exchange.
	// httplimit's sequence, its steps called here to time the decision
	// and log it.
	var res rules.Result
	// held is the copy of res that is charged, and released here: res
	// itself, then the exchange's (a copy made before its Charge would
	// end the reservations Charge ends a second time).
	held := &res
	if s.Engine != nil {
		t0 := conns.MonoNow()
		res = httplimit.Decide(r, s.Engine)
		g.M.DecisionTime.Observe(time.Since(t0).Seconds())
		if res.Holds() {
			// Concurrency slots and counting reservations: the
			// handler returns once the exchange (a streamed body
			// included) has ended, whichever way.
			defer func() { held.Release() }()
		}
		if ent != nil {
			ent.Result(&res)
		}
		steps := &h2Steps
		if rt.GRPC {
			steps = &grpcSteps
		}
		if !httplimit.Enforce(w, r, &res, steps) {
			if !res.Refused() { // a delay its client left
				g.M.DelaysCancelled.Inc()
				if ent != nil {
					ent.ClientLeft()
				}
			}
			return
		}
	}
	if rt.Demo {
		httplimit.Finish(w.Header(), &res)
		httplimit.Charge(r, &res, http.StatusOK, w.Header()) //nolint:errcheck // the engine logs a store error
		demoH2(w, r)
		return
	}
	ex := &h2Exchange{s: s, rt: rt, rawPath: raw, res: res}
	held = &ex.res
	g.proxyH2(w, r, ex)
}

// h2Steps and grpcSteps are how httplimit.Enforce carries out a decision
// on the net/http path: a refusal as httplimit writes it, or on a gRPC
// route as a gRPC status (writeGRPCRefusal).
var (
	h2Steps   httplimit.Config
	grpcSteps = httplimit.Config{Refuse: func(w http.ResponseWriter, _ *http.Request, res *rules.Result) { writeGRPCRefusal(w, res) }}
)

// headerReadLimit is the net/http server's MaxHeaderBytes for a
// listener's max_header_list_size: Go's HTTP/2 server decodes a header
// list up to it (plus 320 bytes) and advertises it as
// SETTINGS_MAX_HEADER_LIST_SIZE, its HTTP/1.1 reads a head up to it
// (plus 4096); serveH2 holds the list to max_header_list_size itself
// (headerListSize), with a 431 of its own.
func headerReadLimit(maxList int) int { return 4 * maxList }

// headerListSize is the size of r's header list as RFC 9113 §6.5.2
// counts it: names and values plus 32 bytes a field, the pseudo-header
// fields (:method, :scheme, :authority, :path) included, on HTTP/1.1 as
// on HTTP/2 (net/http joins HTTP/2's cookie crumbs into one field: they
// count as one).
func headerListSize(r *http.Request) int {
	const overhead = 32
	n := len(":method") + len(r.Method) + len(":scheme") + len("https") + len(":authority") + len(r.Host) +
		len(":path") + len(r.RequestURI) + 4*overhead
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + overhead
		}
	}
	return n
}

// countProtocol counts r in the requests by protocol.
func (g *Server) countProtocol(r *http.Request, rt *exchange.Route) {
	m := &g.M.H2
	switch {
	case r.ProtoMajor != 2:
		m.H1.Inc()
	case rt != nil && rt.GRPC:
		m.GRPC.Inc()
	case r.TLS == nil:
		m.H2c.Inc()
	default:
		m.H2.Inc()
	}
}

// requestPath is the path of r's target as the client sent it, encodings
// kept.
func requestPath(r *http.Request) string {
	u := r.RequestURI
	if u == "" || u[0] != '/' {
		return r.URL.EscapedPath()
	}
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u = u[:i]
	}
	return u
}

// problemH2 answers with an RFC 9457 application/problem+json body, as
// problem does on the fasthttp path: httplimit.WriteProblem (nosniff,
// no-store, no body for HEAD).
func problemH2(w http.ResponseWriter, r *http.Request, status int, title, detail string) {
	httplimit.WriteProblem(w, r, status, title, detail)
}

// demoH2 is the built-in demo origin on the net/http path.
func demoH2(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(exchange.DemoBody)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(exchange.DemoBody))
	}
}
