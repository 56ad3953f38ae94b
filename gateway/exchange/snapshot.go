package exchange

import (
	"crypto/tls"
	"net/http/httputil"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/accesslog"
	"github.com/tollgate-dev/tollgate/adaptive"
	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/gateway/adapt"
	"github.com/tollgate-dev/tollgate/gateway/conns"
	"github.com/tollgate-dev/tollgate/gateway/observe"
	"github.com/tollgate-dev/tollgate/rules"
)

// Snapshot is everything one configuration serves with. It is immutable
// once built and swapped whole on reload.
type Snapshot struct {
	Cfg    *config.Config
	Engine *rules.Engine // nil when there are no rules
	Routes []*Route      // most specific first
	Cert   *tls.Certificate
	// Shown is the running configuration as /config serves it.
	Shown []byte
	// LogAccess is whether requests are written to the access log.
	LogAccess bool
	// AccessQuery is what the access log keeps of a query string.
	AccessQuery accesslog.Query
	// Trusted are client_ip.trusted_proxies: only from them is an
	// incoming X-Forwarded-For kept (and appended to).
	Trusted rules.Proxies
	// Nets finds a request's client network as the rule engine does, for
	// upstream.max_conns_per_client.
	Nets *rules.ClientNets
	// RefusesWithoutRedis names the enforced rules on Redis whose failure
	// mode is closed: while Redis is down they refuse, and /readyz says
	// so. Empty when the store is in memory.
	RefusesWithoutRedis []string
	// Loops are the adaptive controllers this configuration runs, by
	// name (controllers.commit starts them once it is in place).
	Loops map[string]*adaptive.Loop
	// Obs counts the decisions (the dashboard samples its counters);
	// tops are the rules' heavy hitters by position, nil when the
	// dashboard is off.
	Obs      *observe.Observer
	Tops     []*observe.RuleTops
	Observer rules.Observer // the engine's: obs, or one over it
	// RefusesWhileCold names the enforced gossip rules whose failure mode
	// is closed: the gateway is not ready until its gossip node is warm.
	RefusesWhileCold []string
}

// Route is one compiled config.Route.
type Route struct {
	Name     string // metrics label: "host/path" as configured
	Host     string // lower case, no port; "" matches all
	Path     string
	Demo     bool
	Client   *fasthttp.HostClient
	TLS      bool
	Addr     string // upstream host:port, for WebSocket tunnels
	HostHdr  string // upstream Host header
	BasePath string // upstream URL path prefix, without trailing slash

	// The net/http data path's (listen.http2 on): see package h2path.
	GRPC     bool                   // a gRPC route
	Protocol string                 // towards the upstream: http1 or http2
	H2Proxy  *httputil.ReverseProxy // nil unless listen.http2 is on

	DialTimeout time.Duration
	UpTime      prometheus.Observer
	UpStatus    [7]prometheus.Counter // by statusIndex
	// Meters measure the exchanges for the adaptive controllers whose
	// upstream this route's is.
	Meters []*adaptive.Meter
	// Conc bounds the requests in flight to the upstream
	// (adaptive_concurrency); nil without.
	Conc *adapt.ConcLimit
	// Holds bounds what one client holds of the upstream's pool to
	// share (upstream.max_conns_per_client); nil for the demo origin.
	Holds        *conns.ClientHolds
	Share        int32
	ShareRefused prometheus.Counter
}

// IsTrusted reports whether a is a trusted proxy.
func (s *Snapshot) IsTrusted(a netip.Addr) bool { return s.Trusted.Contains(a) }

// Match returns the route for ctx, or nil.
func (s *Snapshot) Match(host, path []byte) *Route {
	host = rules.HostOnly(host) // as the rule engine reads it
	for _, r := range s.Routes {
		if r.Host != "" && !EqualFold(host, r.Host) {
			continue
		}
		if len(path) >= len(r.Path) && string(path[:len(r.Path)]) == r.Path {
			return r
		}
	}
	return nil
}

func EqualFold(b []byte, s string) bool {
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
