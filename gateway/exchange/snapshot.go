package exchange

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"net"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/accesslog"
	"github.com/tollgate-dev/tollgate/adaptive"
	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/rules"
)

// snapshot is everything one configuration serves with. It is immutable
// once built and swapped whole on reload.
type snapshot struct {
	cfg    *config.Config
	engine *rules.Engine // nil when there are no rules
	routes []*route      // most specific first
	cert   *tls.Certificate
	// shown is the running configuration as /config serves it.
	shown []byte
	// logAccess is whether requests are written to the access log.
	logAccess bool
	// accessQuery is what the access log keeps of a query string.
	accessQuery accesslog.Query
	// trusted are client_ip.trusted_proxies: only from them is an
	// incoming X-Forwarded-For kept (and appended to).
	trusted rules.Proxies
	// nets finds a request's client network as the rule engine does, for
	// upstream.max_conns_per_client.
	nets *rules.ClientNets
	// refusesWithoutRedis names the enforced rules on Redis whose failure
	// mode is closed: while Redis is down they refuse, and /readyz says
	// so. Empty when the store is in memory.
	refusesWithoutRedis []string
	// loops are the adaptive controllers this configuration runs, by
	// name (controllers.commit starts them once it is in place).
	loops map[string]*adaptive.Loop
	// obs counts the decisions (the dashboard samples its counters);
	// tops are the rules' heavy hitters by position, nil when the
	// dashboard is off.
	obs      *observer
	tops     []*ruleTops
	observer rules.Observer // the engine's: obs, or one over it
	// refusesWhileCold names the enforced gossip rules whose failure mode
	// is closed: the gateway is not ready until its gossip node is warm.
	refusesWhileCold []string
}

// route is one compiled config.Route.
type route struct {
	name     string // metrics label: "host/path" as configured
	host     string // lower case, no port; "" matches all
	path     string
	demo     bool
	client   *fasthttp.HostClient
	tls      bool
	addr     string // upstream host:port, for WebSocket tunnels
	hostHdr  string // upstream Host header
	basePath string // upstream URL path prefix, without trailing slash

	// The net/http data path's (listen.http2 on): see h2proxy.go.
	grpc     bool                   // a gRPC route
	protocol string                 // towards the upstream: http1 or http2
	h2proxy  *httputil.ReverseProxy // nil unless listen.http2 is on

	dialTimeout time.Duration
	upTime      prometheus.Observer
	upStatus    [7]prometheus.Counter // by statusIndex
	// meters measure the exchanges for the adaptive controllers whose
	// upstream this route's is.
	meters []*adaptive.Meter
	// conc bounds the requests in flight to the upstream
	// (adaptive_concurrency); nil without.
	conc *concLimit
	// holds bounds what one client holds of the upstream's pool to
	// share (upstream.max_conns_per_client); nil for the demo origin.
	holds        *clientHolds
	share        int32
	shareRefused prometheus.Counter
}

// build compiles cfg into a snapshot over the gateway's store. It is
// called with g.mu held (or before the gateway is shared).
func (g *Gateway) build(cfg *config.Config) (*snapshot, error) {
	s := &snapshot{cfg: cfg, logAccess: cfg.AccessLog.Path != ""}
	q, err := accesslog.NewQuery(cfg.AccessLog.Query, cfg.AccessLog.Redact)
	if err != nil {
		return nil, fmt.Errorf("access_log: %w", err)
	}
	s.accessQuery = q
	loops, err := g.adapt.prepare(cfg)
	if err != nil {
		return nil, fmt.Errorf("adaptive: %w", err)
	}
	s.loops = loops
	if len(cfg.Rules) > 0 {
		rc, err := cfg.EngineConfig() // a copy: the observer and logger are per snapshot
		if err != nil {
			return nil, fmt.Errorf("rules: %w", err)
		}
		obs := g.m.newObserver()
		rc.Observer, s.tops = g.dash.observer(obs, cfg, &rc)
		s.obs, s.observer = obs, rc.Observer
		rc.Logger = g.log
		rc.Stores = g.stores.For(&rc)
		rc.Scales = scales(loops)
		rc.Slots = g.slots
		st, err := g.stores.Engine(&rc)
		if err != nil {
			return nil, fmt.Errorf("rules: on_error: %w", err)
		}
		e, err := rules.New(rc, st)
		if err != nil {
			return nil, fmt.Errorf("rules: %w", err)
		}
		obs.bind(&rc, e)
		s.engine = e
		s.refusesWithoutRedis = refusesWithoutRedis(&rc, g.stores.Redis() != nil)
		s.refusesWhileCold = refusesWhileCold(&rc)
	}
	for _, rc := range cfg.Routes {
		r, err := g.buildRoute(cfg, rc)
		if err != nil {
			return nil, err
		}
		r.meters = metersFor(loops, rc.Upstream)
		if rc.AdaptiveConcurrency != nil && !r.demo {
			r.conc = g.concs.forRoute(r.name, rc.AdaptiveConcurrency)
		}
		s.routes = append(s.routes, r)
	}
	// Host-specific routes before catch-alls, then longest path first.
	slices.SortStableFunc(s.routes, func(a, b *route) int {
		if (a.host == "") != (b.host == "") {
			if a.host == "" {
				return 1
			}
			return -1
		}
		return cmp.Compare(len(b.path), len(a.path))
	})
	if t := cfg.Listen.TLS; t != nil {
		cert, err := tls.LoadX509KeyPair(cfg.Resolve(t.Cert), cfg.Resolve(t.Key))
		if err != nil {
			return nil, fmt.Errorf("listen.tls: %w", err)
		}
		s.cert = &cert
	}
	trusted, err := rules.ParseProxies(cfg.ClientIP.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("client_ip: %w", err)
	}
	s.trusted = trusted
	if s.nets, err = rules.NewClientNets(cfg.ClientIP); err != nil {
		return nil, fmt.Errorf("client_ip: %w", err)
	}
	shown, err := cfg.Masked()
	if err != nil {
		return nil, err
	}
	s.shown = shown
	return s, nil
}

func (g *Gateway) buildRoute(cfg *config.Config, rc config.Route) (*route, error) {
	r := &route{
		name:        rc.Host + rc.Path,
		host:        strings.ToLower(rules.HostOnly(rc.Host)), // as a request's (match)
		path:        rc.Path,
		dialTimeout: cfg.Upstream.DialTimeout,
	}
	r.upTime = g.m.upstreamTime.WithLabelValues(r.name)
	r.shareRefused = g.m.shareRefused.WithLabelValues(r.name)
	for i, class := range statusLabels {
		r.upStatus[i] = g.m.upstreamStatus.WithLabelValues(r.name, class)
	}
	r.grpc, r.protocol = rc.GRPC, rc.Protocol
	if rc.Upstream == "demo" {
		r.demo = true
		return r, nil
	}
	u, err := url.Parse(rc.Upstream)
	if err != nil {
		return nil, fmt.Errorf("route %s: %w", r.name, err)
	}
	r.tls = u.Scheme == "https"
	r.addr = u.Host
	if u.Port() == "" {
		port := "80"
		if r.tls {
			port = "443"
		}
		r.addr = net.JoinHostPort(u.Hostname(), port)
	}
	r.hostHdr = u.Host
	r.basePath = strings.TrimSuffix(u.Path, "/")
	r.client = g.client(cfg.Upstream, r.addr, r.tls)
	if share := min(cfg.Upstream.MaxConnsPerClient, cfg.Upstream.MaxConns, 1<<30); share > 0 {
		r.holds, r.share = g.holdsFor(r.addr), int32(share)
	}
	if cfg.Listen.HTTP2 == config.HTTP2On {
		r.h2proxy = g.newH2Proxy(r, g.transport(cfg.Upstream, r.addr, r.protocol, r.tls))
	}
	return r, nil
}

// client returns the shared HostClient for an upstream with these
// settings, so that a reload keeps warm keep-alive connections.
func (g *Gateway) client(u config.Upstream, addr string, isTLS bool) *fasthttp.HostClient {
	key := fmt.Sprintf("%s|%t|%v|%v|%v|%d", addr, isTLS, u.DialTimeout, u.ResponseTimeout, u.IdleConnTimeout, u.MaxConns)
	if c, ok := g.clients[key]; ok {
		return c
	}
	dialer := &net.Dialer{Timeout: u.DialTimeout, KeepAlive: 30 * time.Second}
	c := &fasthttp.HostClient{
		Addr:                          addr,
		IsTLS:                         isTLS,
		MaxConns:                      u.MaxConns,
		MaxConnWaitTimeout:            u.ResponseTimeout,
		MaxIdleConnDuration:           u.IdleConnTimeout,
		StreamResponseBody:            true,
		DisablePathNormalizing:        true,
		DisableHeaderNamesNormalizing: false,
		NoDefaultUserAgentHeader:      true,
		MaxIdemponentCallAttempts:     1,
		Dial:                          g.conns.dial(dialer, u.ResponseTimeout),
		// Response heads up to 16 KiB: long Content-Security-Policy or
		// Set-Cookie fields are common, and fasthttp's default 4 KiB
		// answered them 502.
		ReadBufferSize: maxResponseHead,
	}
	g.clients[key] = c
	return c
}

// isTrusted reports whether a is a trusted proxy.
func (s *snapshot) isTrusted(a netip.Addr) bool { return s.trusted.Contains(a) }

// match returns the route for ctx, or nil.
func (s *snapshot) match(host, path []byte) *route {
	host = rules.HostOnly(host) // as the rule engine reads it
	for _, r := range s.routes {
		if r.host != "" && !equalFold(host, r.host) {
			continue
		}
		if len(path) >= len(r.path) && string(path[:len(r.path)]) == r.path {
			return r
		}
	}
	return nil
}

func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
