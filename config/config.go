package config

import (
	"time"

	"github.com/tollgate-dev/tollgate/rules"
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
	Adaptive map[string]Adaptive `yaml:"adaptive"`
	// ConcurrencyLease is how long a concurrency slot held on Redis
	// (algorithm concurrency, store.redis) lives without being renewed:
	// the gateway holding it renews it every third of that, so a gateway
	// that dies gives its slots back within one lease. Default 30s; at
	// least 100ms. A change needs a restart.
	ConcurrencyLease time.Duration `yaml:"concurrency_lease"`
	// AccessLog is off unless a path is given.
	AccessLog AccessLog `yaml:"access_log"`
	// Reload controls watching the file for changes (SIGHUP always
	// reloads).
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
	// WriteTimeout bounds writing a response. Zero (the default) means no
	// limit, so that long downloads and streams are not cut; otherwise at
	// least 1ms (no response can be written in less).
	WriteTimeout time.Duration `yaml:"write_timeout"`
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
}

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
}

// Store chooses the counter store: exactly one of Memory or Redis.
type Store struct {
	// Memory keeps the counters in the gateway's own memory (the default
	// when neither is given): nothing shared between gateways.
	Memory *MemoryStore `yaml:"memory"`
	// Redis keeps the counters on Redis, shared by every gateway using it.
	Redis *RedisStore `yaml:"redis"`
}

// MemoryStore is the in-process store.
type MemoryStore struct {
	// MaxKeys bounds the number of live keys (memory). Default 1,000,000.
	MaxKeys int `yaml:"max_keys"`
}

// RedisStore is the shared store on Redis.
type RedisStore struct {
	// URL is redis://[user:password@]host:port[/db]; the password is
	// masked wherever the config is shown.
	URL string `yaml:"url"`
	// Cluster lists more host:port seeds of a Redis Cluster besides URL's
	// host (the client discovers the rest).
	Cluster []string `yaml:"cluster"`
	// Prefix is prepended to every key. Default "tollgate:".
	Prefix string `yaml:"prefix"`
	// Timeout bounds one Redis round trip. Default 50ms.
	Timeout time.Duration `yaml:"timeout"`
	// OnError is the old place of the failure mode.
	//
	// Deprecated: the failure mode is the top-level on_error
	// (rules.Config.OnError: open, closed or local), for every rule on
	// whatever store; a strict rule may set its own. A value here is
	// reported at its line with the setting to write instead.
	OnError string `yaml:"on_error"`
}

// AccessLog writes one line per request.
type AccessLog struct {
	// Path is a file to append to, or "-" for standard output. Empty
	// (the default): no access log.
	Path string `yaml:"path"`
	// Format is "json" (JSON lines, the default) or "combined" (the
	// Apache/nginx combined format with the rule and decision appended).
	Format string `yaml:"format"`
}

// Reload controls watching the configuration file and the members files
// its rules name (tiers.members_file).
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
	// reloaded. Default 1s; at least 10ms.
	Settle time.Duration `yaml:"settle"`
}
