package gateway

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/accesslog"
	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/gateway/adapt"
	"github.com/tollgate-dev/tollgate/gateway/conns"
	"github.com/tollgate-dev/tollgate/gateway/exchange"
	"github.com/tollgate-dev/tollgate/gateway/observe"
	"github.com/tollgate-dev/tollgate/rules"
)

// holdsFor returns the clientHolds of the upstream at addr, shared by the
// routes to it and kept across reloads (the share is each snapshot's
// route's). Called with g.mu held.
func (g *Gateway) holdsFor(addr string) *conns.ClientHolds {
	h := g.holds[addr]
	if h == nil {
		h = &conns.ClientHolds{}
		if g.holds == nil {
			g.holds = map[string]*conns.ClientHolds{}
		}
		g.holds[addr] = h
	}
	return h
}

// build compiles cfg into a snapshot over the gateway's store. It is
// called with g.mu held (or before the gateway is shared).
func (g *Gateway) build(cfg *config.Config) (*exchange.Snapshot, error) {
	s := &exchange.Snapshot{Cfg: cfg, LogAccess: cfg.AccessLog.Path != ""}
	q, err := accesslog.NewQuery(cfg.AccessLog.Query, cfg.AccessLog.Redact)
	if err != nil {
		return nil, fmt.Errorf("access_log: %w", err)
	}
	s.AccessQuery = q
	loops, err := g.adapt.Prepare(cfg)
	if err != nil {
		return nil, fmt.Errorf("adaptive: %w", err)
	}
	s.Loops = loops
	if len(cfg.Rules) > 0 {
		rc, err := cfg.EngineConfig() // a copy: the observer and logger are per snapshot
		if err != nil {
			return nil, fmt.Errorf("rules: %w", err)
		}
		obs := g.core.M.NewObserver()
		rc.Observer, s.Tops = g.dash.Observer(obs, cfg, &rc)
		s.Obs, s.Observer = obs, rc.Observer
		rc.Logger = g.core.Log
		rc.Stores = g.stores.For(&rc)
		rc.Scales = adapt.Scales(loops)
		rc.Slots = g.slots
		st, err := g.stores.Engine(&rc)
		if err != nil {
			return nil, fmt.Errorf("rules: on_error: %w", err)
		}
		e, err := rules.New(rc, st)
		if err != nil {
			return nil, fmt.Errorf("rules: %w", err)
		}
		obs.Bind(&rc, e)
		s.Engine = e
		s.RefusesWithoutRedis = refusesWithoutRedis(&rc, g.stores.Redis() != nil)
		s.RefusesWhileCold = refusesWhileCold(&rc)
	}
	for _, rc := range cfg.Routes {
		r, err := g.buildRoute(cfg, rc)
		if err != nil {
			return nil, err
		}
		r.Meters = adapt.MetersFor(loops, rc.Upstream)
		if rc.AdaptiveConcurrency != nil && !r.Demo {
			r.Conc = g.concs.ForRoute(r.Name, rc.AdaptiveConcurrency)
		}
		s.Routes = append(s.Routes, r)
	}
	// Host-specific routes before catch-alls, then longest path first.
	slices.SortStableFunc(s.Routes, func(a, b *exchange.Route) int {
		if (a.Host == "") != (b.Host == "") {
			if a.Host == "" {
				return 1
			}
			return -1
		}
		return cmp.Compare(len(b.Path), len(a.Path))
	})
	if t := cfg.Listen.TLS; t != nil {
		cert, err := tls.LoadX509KeyPair(cfg.Resolve(t.Cert), cfg.Resolve(t.Key))
		if err != nil {
			return nil, fmt.Errorf("listen.tls: %w", err)
		}
		s.Cert = &cert
	}
	trusted, err := rules.ParseProxies(cfg.ClientIP.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("client_ip: %w", err)
	}
	s.Trusted = trusted
	if s.Nets, err = rules.NewClientNets(cfg.ClientIP); err != nil {
		return nil, fmt.Errorf("client_ip: %w", err)
	}
	shown, err := cfg.Masked()
	if err != nil {
		return nil, err
	}
	s.Shown = shown
	return s, nil
}

func (g *Gateway) buildRoute(cfg *config.Config, rc config.Route) (*exchange.Route, error) {
	r := &exchange.Route{
		Name:        rc.Host + rc.Path,
		Host:        strings.ToLower(rules.HostOnly(rc.Host)), // as a request's (match)
		Path:        rc.Path,
		DialTimeout: cfg.Upstream.DialTimeout,
	}
	r.UpTime = g.core.M.UpstreamTime.WithLabelValues(r.Name)
	r.ShareRefused = g.core.M.ShareRefused.WithLabelValues(r.Name)
	for i, class := range observe.StatusLabels {
		r.UpStatus[i] = g.core.M.UpstreamStatus.WithLabelValues(r.Name, class)
	}
	r.GRPC, r.Protocol = rc.GRPC, rc.Protocol
	if rc.Upstream == "demo" {
		r.Demo = true
		return r, nil
	}
	u, err := url.Parse(rc.Upstream)
	if err != nil {
		return nil, fmt.Errorf("route %s: %w", r.Name, err)
	}
	r.TLS = u.Scheme == "https"
	r.Addr = u.Host
	if u.Port() == "" {
		port := "80"
		if r.TLS {
			port = "443"
		}
		r.Addr = net.JoinHostPort(u.Hostname(), port)
	}
	r.HostHdr = u.Host
	r.BasePath = strings.TrimSuffix(u.Path, "/")
	r.Client = g.client(cfg.Upstream, r.Addr, r.TLS)
	if share := min(cfg.Upstream.MaxConnsPerClient, cfg.Upstream.MaxConns, 1<<30); share > 0 {
		r.Holds, r.Share = g.holdsFor(r.Addr), int32(share)
	}
	if cfg.Listen.HTTP2 == config.HTTP2On {
		r.H2Proxy = g.h2.NewH2Proxy(r, g.h2.Transport(cfg.Upstream, r.Addr, r.Protocol, r.TLS))
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
		Dial:                          g.core.Conns.Dial(dialer, u.ResponseTimeout),
		// Response heads up to 16 KiB: long Content-Security-Policy or
		// Set-Cookie fields are common, and fasthttp's default 4 KiB
		// answered them 502.
		ReadBufferSize: exchange.MaxResponseHead,
	}
	g.clients[key] = c
	return c
}
