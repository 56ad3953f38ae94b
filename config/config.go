package config

import (
	"time"

	"github.com/tollgate-dev/tollgate/adaptive/adaptiveconf"
	"github.com/tollgate-dev/tollgate/geoip/geoipconf"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/gossip/gossipconf"
	"github.com/tollgate-dev/tollgate/store/redis/redisconf"
)

// Config is the whole of one tollgate configuration file. Every field has a
// documented default, filled by [Config.Defaults]; a Config returned by
// [Load] or [Parse] has them filled and is valid.
type Config struct {
	// File is the path the configuration was read from ("" for the
	// embedded default). Relative paths in the file are resolved against
	// its directory.
	File string `yaml:"-"`
	// paths maps each decoded value's path ("rules[2].policies[0].rate")
	// to its position, to place the rule engine's validation errors.
	paths map[string]Pos
	// warnings are what Parse found valid but probably not meant.
	warnings []*Error

	// Listen is the traffic listener.
	Listen Listen `yaml:"listen"`
	// Admin is the admin listener (metrics, health, running config).
	Admin Admin `yaml:"admin"`
	// Upstream holds the proxy's connection settings towards every route's
	// upstream.
	Upstream Upstream `yaml:"upstream"`
	// Routes map a host and path prefix to an upstream URL, first match
	// wins in the order of the most specific host, then the longest path
	// prefix. Default: one route "/" to the built-in demo origin, which
	// is what the embedded default runs; a file without routes loads
	// with a warning (see [Config.Warnings]), since its traffic goes to
	// the demo origin and not to the author's service.
	Routes []Route `yaml:"routes"`
	// Store is where the counters live. Default: memory.
	Store Store `yaml:"store"`
	// Config is the rule engine's part of the file, decoded in package
	// rules' own vocabulary (its yaml tags) at the top level: rules,
	// client_ip, headers, refusal, max_key_length, key_cache, max_delay
	// and on_error (the failure mode: open, closed or local, the default;
	// what every rule answers while its store fails; see
	// rules.Config.OnErrorOf). See rules.Config for each field, and rules.Rule
	// for a rule's keys, including its consistency tier (consistency,
	// on_error, sync_interval, nodes). An eventual rule's sync_interval is
	// at least 10ms here: a tiny one would spin a core on Redis round
	// trips that can never complete.
	rules.Config `yaml:",inline"`
	// Adaptive are the adaptive controllers by name, each scaling the
	// policies that name it (policies[].adaptive) with the health of an
	// origin. Default: none.
	Adaptive map[string]adaptiveconf.Controller `yaml:"adaptive"`
	// GeoIP names the MaxMind-format databases that answer the country
	// and asn key parts and matchers (geoipconf.Config). Without it, a
	// rule using them is refused at its line. Default: none.
	GeoIP *geoipconf.Config `yaml:"geoip"`
	// ConcurrencyLease is how long a concurrency slot held on Redis
	// (algorithm concurrency, store.redis) lives without being renewed:
	// the gateway holding it renews it every third of that, so a gateway
	// that dies gives its slots back within one lease. Default 30s; at
	// least 100ms. A change needs a restart.
	ConcurrencyLease time.Duration `yaml:"concurrency_lease"`
	// AccessLog is off unless a path is given.
	AccessLog AccessLog `yaml:"access_log"`
	// RefusalLog is off unless a path is given.
	RefusalLog RefusalLog `yaml:"refusal_log"`
	// Reload controls watching the file for changes (SIGHUP always
	// reloads). Replace a watched file by rename: write the new version
	// beside it and move it over it (mv new.yaml tollgate.yaml, or what
	// Kubernetes does to a mounted ConfigMap), so that every read sees a
	// whole version. A file changed while it is read is not loaded (the
	// reload is refused and logged, and the running configuration keeps
	// serving), but a writer in place that pauses for longer than settle
	// is seen half way, and that half is loaded.
	Reload Reload `yaml:"reload"`
	// ShutdownTimeout is how long in-flight requests may take to finish
	// after SIGTERM/SIGINT. Default 15s.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
}

// Listen is the traffic listener.
type Listen struct {
	// Addr is host:port. Default ":8080".
	Addr string `yaml:"addr"`
	// TLS, when set, terminates TLS with a certificate and key.
	TLS *TLS `yaml:"tls"`
	// ReadTimeout bounds reading a request's headers and body.
	// Default 30s; at least 1ms (no request can be read in less).
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// WriteTimeout bounds writing a whole response: on HTTP/1.1 from
	// the end of the request's head (net/http) or from the first byte
	// of the response (fasthttp), on HTTP/2 from the start of the stream,
	// to its last byte, however steadily the client reads. Zero (the
	// default) means no such bound, so that long downloads and streams
	// are not cut (send_timeout still cuts a client that stops reading);
	// otherwise at least 1ms (no response can be written in less).
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// SendTimeout bounds each write to a client, as nginx's send_timeout
	// does, not the whole response: a client that accepts no byte of its
	// response for that long (a full socket on HTTP/1.1, a flow-control
	// window of 0 on an HTTP/2 stream) is cut, its connection closed or
	// its stream reset, and the upstream connection it held is freed; a
	// large download read slowly but steadily is not (the kernel wakes a
	// write waiting on a full socket once about half its send buffer is
	// free, as epoll tells nginx: a client must take that much per
	// send_timeout, 2 MiB a minute with Linux's largest autotuned buffer
	// of 4 MiB). It applies to every
	// connection of the traffic listener (WebSocket tunnels included) and
	// to the admin listener. A write may take up to an eighth more (at
	// most a second more) before it fails: the deadline is moved only
	// that often. Default 60s (nginx's); at least 1ms.
	SendTimeout time.Duration `yaml:"send_timeout"`
	// IdleTimeout closes keep-alive connections idle that long.
	// Default 90s.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// MaxConns caps concurrent client connections. Default 0: unlimited
	// (fasthttp's default of 256×1024).
	MaxConns int `yaml:"max_conns"`
	// MaxRequestBody is the largest request body accepted, in bytes, as
	// announced by Content-Length; larger ones are refused with 413
	// before reaching the upstream. A chunked body has no announced
	// length: it is counted as it streams and cut with 413 at the limit.
	// Default 0: unlimited.
	MaxRequestBody int64 `yaml:"max_request_body"`
	// HTTP2 chooses the listener's data path. "off": the fasthttp
	// HTTP/1.1 path, the fastest for HTTP/1.1 clients (with tls, ALPN
	// offers http/1.1 only). "on": the net/http path with HTTP/2: with
	// tls, ALPN offers h2 and http/1.1; without, h2c (prior knowledge,
	// and HTTP/1.1's Upgrade: h2c) beside HTTP/1.1. Every request of an
	// "on" listener, HTTP/1.1 ones too, goes through net/http, whose
	// HTTP/1.1 is slower than fasthttp's. Default: "on" with tls (as
	// nginx's `listen 443 ssl http2`), "off" without. Routes with
	// protocol http2 and gRPC routes need "on".
	HTTP2 string `yaml:"http2"`
	// MaxConcurrentStreams bounds the streams an HTTP/2 client may have
	// open on one connection (SETTINGS_MAX_CONCURRENT_STREAMS) and the
	// handlers running for it; up to four times as many more streams
	// wait for a handler. Every stream is decided and charged as a
	// request, even one its client resets at once (rapid reset), but one
	// reset while it waits is dropped undecided; a connection with more
	// streams waiting (handlers slower than the client's resets, as
	// behind a stalled store) is closed with GOAWAY ENHANCE_YOUR_CALM.
	// Default 128 (nginx's http2_max_concurrent_streams).
	MaxConcurrentStreams int `yaml:"max_concurrent_streams"`
	// MaxHeaderListSize bounds a request's header list on a listener
	// with http2 on, HTTP/2 and HTTP/1.1 alike (names and values plus 32
	// bytes a field, pseudo-header fields included, RFC 9113 §6.5.2), in
	// bytes; a larger one is refused with 431. Four times it is
	// advertised as SETTINGS_MAX_HEADER_LIST_SIZE and read, so that a
	// list over the bound gets the 431; past that, Go's net/http refuses
	// the request itself (431 in text/html, or the connection closed when
	// one field alone is longer). Default 16384; at least 1024.
	MaxHeaderListSize int `yaml:"max_header_list_size"`
}

// Listener data paths (Listen.HTTP2).
const (
	HTTP2Off = "off"
	HTTP2On  = "on"
)

// Upstream protocols (Route.Protocol).
const (
	ProtocolHTTP1 = "http1"
	ProtocolHTTP2 = "http2"
)

// TLS names PEM files holding a certificate chain and its private key.
type TLS struct {
	// Cert is the PEM file of the certificate chain, leaf first; a
	// relative path is resolved against the configuration file's
	// directory.
	Cert string `yaml:"cert"`
	// Key is the PEM file of the certificate's private key.
	Key string `yaml:"key"`
}

// Admin is the admin listener. It never shares the traffic port.
type Admin struct {
	// Addr is host:port. Default "127.0.0.1:9090"; "off" disables it.
	Addr string `yaml:"addr"`
	// Dashboard is the live dashboard served at /.
	Dashboard Dashboard `yaml:"dashboard"`
}

// Upstream holds the connection settings towards the upstreams.
type Upstream struct {
	// DialTimeout bounds connecting to an upstream. Default 5s; at least
	// 1ms (no connection can be made in less).
	DialTimeout time.Duration `yaml:"dial_timeout"`
	// ResponseTimeout bounds the wait for an upstream's response
	// headers, from sending the request; past it the client gets 504. A
	// large or chunked body then streams for as long as it takes; a small
	// one (64 KiB or less) must arrive within the same bound. Default 60s.
	// The bound is kept with a slack of an eighth of it, at most a
	// second: an exchange fails between ResponseTimeout and
	// ResponseTimeout plus the slack after the request was written. At
	// least 1ms (no upstream can answer in less).
	ResponseTimeout time.Duration `yaml:"response_timeout"`
	// IdleConnTimeout closes idle upstream keep-alive connections.
	// Default 90s.
	IdleConnTimeout time.Duration `yaml:"idle_conn_timeout"`
	// MaxConns caps the connections to each upstream host; requests beyond
	// wait up to ResponseTimeout for a free one. Default 1024. WebSocket
	// tunnels, which hold their connection while they last, are capped
	// at the same number apart: an upgrade beyond gets 503.
	MaxConns int `yaml:"max_conns"`
	// MaxConnsPerClient caps what one client holds of each upstream's
	// pool: the requests to that upstream it has in flight at once, each
	// from the request sent to the last byte of its response written
	// (an upstream connection each on HTTP/1.1; a stream or a connection
	// on the net/http path). A request beyond is answered 503 by the
	// gateway at once, as nginx's limit_conn answers, and never reaches
	// the upstream. The client is its address as the rules find it
	// (client_ip: the peer, or the address a trusted proxy forwards),
	// counted by client_ip.ipv4_prefix and ipv6_prefix. So a client whose
	// connections or streams never read their responses holds no more
	// than this many of the pool until send_timeout cuts them, and the
	// others keep being served. Default an eighth of max_conns (128 with
	// its default); a value of max_conns or more leaves only max_conns.
	// Behind a load balancer or CDN not listed in
	// client_ip.trusted_proxies every request is that proxy's, so the
	// whole traffic shares this cap: list the proxy there (per-client
	// limits need it too), or raise this.
	MaxConnsPerClient int `yaml:"max_conns_per_client"`
}

// Route sends requests matching Host and Path to Upstream.
type Route struct {
	// Host matches the request's host (without port), exactly; empty
	// matches every host.
	Host string `yaml:"host"`
	// Path is a path prefix; default "/".
	Path string `yaml:"path"`
	// Upstream is an http:// or https:// base URL, or "demo" for the
	// built-in demo origin. The request path is appended to the URL's
	// path; the upstream receives its own host in Host (as nginx's
	// proxy_pass does) and the client's in X-Forwarded-Host. The URL
	// must not carry credentials (user:password@), and its port, when
	// given, is from 1 to 65535.
	Upstream string `yaml:"upstream"`
	// Protocol is the HTTP version spoken to the upstream: "http1" or
	// "http2" (h2 by ALPN for an https:// upstream, h2c with prior
	// knowledge for http://). Default http1, http2 for a gRPC route. A
	// route with http2 needs listen.http2 on.
	Protocol string `yaml:"protocol"`
	// GRPC marks the route as a gRPC API (it needs listen.http2 on).
	// Its requests must be gRPC (HTTP/2, content-type application/grpc
	// or application/grpc+...; others are answered 415 or 505); a
	// refusal is a gRPC response, HTTP 200 with grpc-status 8
	// (RESOURCE_EXHAUSTED; 14, UNAVAILABLE, for a store failure refused
	// by on_error closed), a grpc-message, and the rate-limit fields and
	// retry-after as metadata; upstream failures are gRPC statuses too.
	// Rules match a gRPC method by its path (/package.Service/Method),
	// metadata by headers, and key by grpc_service and grpc_method.
	GRPC bool `yaml:"grpc"`
	// AdaptiveConcurrency, when set, bounds the requests in flight to
	// the upstream by a gradient controller (see its type).
	AdaptiveConcurrency *AdaptiveConcurrency `yaml:"adaptive_concurrency"`
}

// Store chooses the counter store: exactly one of Memory or Redis, and
// beside it, for the rules whose consistency is gossip, Gossip.
type Store struct {
	// Memory keeps the counters in the gateway's own memory (the default
	// when neither is given): nothing shared between gateways.
	Memory *MemoryStore `yaml:"memory"`
	// Redis keeps the counters on Redis, shared by every gateway using it.
	Redis *redisconf.Config `yaml:"redis"`
	// Gossip shares the counters of the rules whose consistency is gossip
	// with the other gateways directly, over hashicorp/memberlist: no
	// central store. Required by gossip rules; the rules without that
	// tier keep using memory or redis. Changing it needs a restart.
	Gossip *gossipconf.Config `yaml:"gossip"`
}

// MemoryStore is the in-process store.
type MemoryStore struct {
	// MaxKeys bounds the number of live keys (memory). Default 1,000,000.
	MaxKeys int `yaml:"max_keys"`
}

// AccessLog writes one line per request.
type AccessLog struct {
	// Path is a file to append to, or "-" for standard output. Empty
	// (the default): no access log.
	Path string `yaml:"path"`
	// Format is "json" (JSON lines, the default) or "combined" (the
	// Apache/nginx combined format with the rule and decision appended).
	// A line's status is the answer's, except for a delayed request
	// whose client went away during its delay: 499 and 0 bytes, as nginx
	// logs it ("client closed request"), not the 503 written to the
	// closed connection.
	Format string `yaml:"format"`
	// Query is what a line keeps of the request-target's query string:
	// keep (the default, every byte, as nginx writes $request), drop (no
	// query at all), or redact (every parameter, the values of those
	// named in redact written as REDACTED). Query strings carry tokens,
	// API keys and signatures: a log shipped elsewhere should redact
	// them. It takes effect on reload.
	Query string `yaml:"query"`
	// Redact names the query parameters whose values query: redact
	// replaces, matched without regard to case once decoded ("token",
	// "api_key"). Empty: every parameter's value.
	Redact []string `yaml:"redact"`
}

// Reload controls watching the configuration file and the list files its
// rules name (tiers.members_file, except[].clients_file and keys_file).
//
// A file is reloaded only once it has stopped changing: its size,
// modification time and contents the same at every look for Settle. A
// writer that pauses for longer than Settle in the middle of a file can
// still be caught half way, so write the new version beside the old one
// and rename it over it (an atomic replace, as `mv new.yaml tollgate.yaml`
// or most configuration management tools do): the watcher then sees the
// old file or the new one, never a mix. SIGHUP reloads at once.
type Reload struct {
	// Watch polls the files for changes and reloads them. Default true.
	Watch *bool `yaml:"watch"`
	// Interval is the polling period. Default 2s; at least 10ms, whether
	// or not Watch is on (the file is polled either way, and a tiny
	// period would spin a core).
	Interval time.Duration `yaml:"interval"`
	// Settle is how long a changed file must stay unchanged before it is
	// reloaded. Default 1s; at least 10ms. It guards against a writer in
	// place that pauses for less; replace files by rename (see reload).
	Settle time.Duration `yaml:"settle"`
}
