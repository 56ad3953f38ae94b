package config

import "time"

// Config is the whole of one tollgate configuration file. Every field has a
// documented default, filled by [Config.Defaults]; a Config returned by
// [Load] or [Parse] has them filled and is valid.
type Config struct {
	Pos Pos `yaml:"-"`
	// File is the path the configuration was read from ("" for the
	// embedded default). Relative paths in the file are resolved against
	// its directory.
	File string `yaml:"-"`

	// Listen is the traffic listener.
	Listen Listen `yaml:"listen"`
	// Admin is the admin listener (metrics, health, running config).
	Admin Admin `yaml:"admin"`
	// Upstream holds the proxy's connection settings towards every route's
	// upstream.
	Upstream Upstream `yaml:"upstream"`
	// Routes map a host and path prefix to an upstream URL, first match
	// wins in the order of the most specific host, then the longest path
	// prefix. Default: one route "/" to the built-in demo origin.
	Routes []Route `yaml:"routes"`
	// Store is where the counters live. Default: memory.
	Store Store `yaml:"store"`
	// ClientIP says how the client address is found behind proxies.
	ClientIP ClientIP `yaml:"client_ip"`
	// Headers chooses which rate-limit response headers are written.
	Headers Headers `yaml:"headers"`
	// Refusal is the response to a refused request.
	Refusal Refusal `yaml:"refusal"`
	// Rules are the limits. Several may apply to one request; all are
	// decided as one (all-or-nothing charging).
	Rules []Rule `yaml:"rules"`
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
	Pos Pos `yaml:"-"`
	// Addr is host:port. Default ":8080".
	Addr string `yaml:"addr"`
	// TLS, when set, terminates TLS with a certificate and key.
	TLS *TLS `yaml:"tls"`
	// ReadTimeout bounds reading a request's headers and body.
	// Default 30s.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// WriteTimeout bounds writing a response. Zero (the default) means no
	// limit, so that long downloads and streams are not cut.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// IdleTimeout closes keep-alive connections idle that long.
	// Default 90s.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// MaxConns caps concurrent client connections. Default 0: unlimited
	// (fasthttp's default of 256×1024).
	MaxConns int `yaml:"max_conns"`
	// MaxRequestBody is the largest request body accepted, in bytes;
	// larger ones are refused with 413. Default 0: unlimited (streamed).
	MaxRequestBody int64 `yaml:"max_request_body"`
}

// TLS names PEM files holding a certificate chain and its private key.
type TLS struct {
	Pos  Pos    `yaml:"-"`
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
}

// Admin is the admin listener. It never shares the traffic port.
type Admin struct {
	Pos Pos `yaml:"-"`
	// Addr is host:port. Default "127.0.0.1:9090"; "off" disables it.
	Addr string `yaml:"addr"`
}

// Upstream holds the connection settings towards the upstreams.
type Upstream struct {
	Pos Pos `yaml:"-"`
	// DialTimeout bounds connecting to an upstream. Default 5s.
	DialTimeout time.Duration `yaml:"dial_timeout"`
	// ResponseTimeout bounds the wait for an upstream's response headers;
	// past it the client gets 504. Default 60s.
	ResponseTimeout time.Duration `yaml:"response_timeout"`
	// IdleConnTimeout closes idle upstream keep-alive connections.
	// Default 90s.
	IdleConnTimeout time.Duration `yaml:"idle_conn_timeout"`
	// MaxConns caps the connections to each upstream host; requests beyond
	// wait up to ResponseTimeout for a free one. Default 1024.
	MaxConns int `yaml:"max_conns"`
}

// Route sends requests matching Host and Path to Upstream.
type Route struct {
	Pos Pos `yaml:"-"`
	// Host matches the request's host (without port), exactly; empty
	// matches every host.
	Host string `yaml:"host"`
	// Path is a path prefix; default "/".
	Path string `yaml:"path"`
	// Upstream is an http:// or https:// base URL, or "demo" for the
	// built-in demo origin.
	Upstream string `yaml:"upstream"`
}

// Store chooses the counter store: exactly one of Memory or Redis.
type Store struct {
	Pos    Pos          `yaml:"-"`
	Memory *MemoryStore `yaml:"memory"`
	Redis  *RedisStore  `yaml:"redis"`
}

// MemoryStore is the in-process store.
type MemoryStore struct {
	Pos Pos `yaml:"-"`
	// MaxKeys bounds the number of live keys (memory). Default 1000000.
	MaxKeys int `yaml:"max_keys"`
}

// RedisStore is the shared store on Redis.
type RedisStore struct {
	Pos Pos `yaml:"-"`
	// URL is redis://[user:password@]host:port[/db]; the password is
	// masked wherever the config is shown.
	URL string `yaml:"url"`
	// Timeout bounds one Redis round trip. Default 50ms.
	Timeout time.Duration `yaml:"timeout"`
	// OnError is what a decision does when Redis fails: "open" (allow,
	// the default), "closed" (refuse) or "local" (decide in memory).
	OnError string `yaml:"on_error"`
}

// ClientIP says how the client address is derived.
type ClientIP struct {
	Pos Pos `yaml:"-"`
	// TrustedProxies are the CIDRs (or single addresses) of proxies whose
	// forwarding headers are believed. Empty (the default): none, the
	// client address is the connection's peer.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// Header is the forwarding header read from trusted proxies:
	// "x-forwarded-for" (default), "forwarded" or "x-real-ip".
	Header string `yaml:"header"`
	// IPv6Prefix aggregates IPv6 clients to this prefix length.
	// Default 64.
	IPv6Prefix int `yaml:"ipv6_prefix"`
	// IPv4Prefix aggregates IPv4 clients to this prefix length.
	// Default 32.
	IPv4Prefix int `yaml:"ipv4_prefix"`
}

// Headers chooses the rate-limit headers written on every response.
type Headers struct {
	Pos Pos `yaml:"-"`
	// Styles lists any of "ietf" (RateLimit and RateLimit-Policy, draft
	// -10), "draft-6" (RateLimit-Limit/Remaining/Reset), "x-ratelimit"
	// (X-RateLimit-*), or "none". Default ["ietf"]. Retry-After is always
	// sent on a refusal.
	Styles []string `yaml:"styles"`
	// XReset is how X-RateLimit-Reset is written: "delta" seconds (the
	// default) or "epoch" seconds (GitHub's).
	XReset string `yaml:"x_reset"`
}

// Refusal is the response to a refused request.
type Refusal struct {
	Pos Pos `yaml:"-"`
	// Status is 429 (the default) or another 4xx/5xx, e.g. 503 as nginx.
	Status int `yaml:"status"`
	// Body replaces the default application/problem+json body.
	Body string `yaml:"body"`
	// ContentType is Body's media type. Default "text/plain; charset=utf-8"
	// when Body is set.
	ContentType string `yaml:"content_type"`
}

// Policy is an algorithm with its parameters, written inline in a rule or
// in a tier's plan.
type Policy struct {
	Pos Pos `yaml:"-"`
	// Algorithm is fixed_window, sliding_log, sliding_window, token_bucket
	// (the default when rate is set) or leaky_bucket.
	Algorithm string `yaml:"algorithm"`
	// Rate is COUNT/PERIOD ("100/s", "7/90s") for token_bucket and
	// leaky_bucket.
	Rate string `yaml:"rate"`
	// Burst is token_bucket's capacity (default: the rate's count) or
	// leaky_bucket's excess (default 0). Must not be negative.
	Burst *int64 `yaml:"burst"`
	// Limit and Window are the window algorithms' parameters: at most
	// Limit per Window ("1m", "90s", "1h").
	Limit  int64  `yaml:"limit"`
	Window string `yaml:"window"`
	// Mode is leaky_bucket's "shape" (delay the excess, the default) or
	// "police" (refuse it, nginx nodelay).
	Mode string `yaml:"mode"`
	// Delay is leaky_bucket shape's count of excess requests passed
	// undelayed (nginx delay=N).
	Delay int64 `yaml:"delay"`
}

// Rule is one limit: which requests it applies to, what it counts them by,
// and its policy (inline, or per plan with Tiers).
type Rule struct {
	Pos Pos `yaml:"-"`
	// Name identifies the rule in headers, metrics and logs; it must be
	// unique and made of letters, digits, '-', '_' and '.'. Counters of a
	// rule survive a reload as long as its name, key and policy do.
	Name string `yaml:"name"`
	// Match selects requests; empty matches all.
	Match Match `yaml:"match"`
	// Key is what requests are counted by: "ip", "header:NAME",
	// "query:NAME", "path", "method", "host", "global", or several joined
	// with '+' ("ip+path"). Default "ip".
	Key string `yaml:"key"`
	// OnMissingKey is "skip" (the rule does not apply, nginx's rule; the
	// default) or "anonymous" (one shared bucket for requests without it).
	OnMissingKey string `yaml:"on_missing_key"`
	// Policy is the rule's limit when it has no Tiers.
	Policy `yaml:",inline"`
	// Cost is what one request costs, 0 or more. Default 1.
	Cost *int64 `yaml:"cost"`
	// Costs override Cost for requests matching a method and/or path
	// prefix, first match wins.
	Costs []Cost `yaml:"costs"`
	// Shadow makes the rule decide, count and log, but never refuse or
	// delay.
	Shadow bool `yaml:"shadow"`
	// Tiers give each identity a plan with its own policy.
	Tiers *Tiers `yaml:"tiers"`
}

// Match selects requests. All given conditions must hold.
type Match struct {
	Pos Pos `yaml:"-"`
	// Methods lists HTTP methods (any of them matches).
	Methods []string `yaml:"methods"`
	// Host matches the request host without port, exactly.
	Host string `yaml:"host"`
	// Path is a path prefix; PathExact an exact path; Pattern a Go 1.22
	// ServeMux pattern path such as "/users/{id}/posts".
	Path      string `yaml:"path"`
	PathExact string `yaml:"path_exact"`
	Pattern   string `yaml:"pattern"`
	// Headers must be present; a non-empty value must also be equal.
	Headers map[string]string `yaml:"headers"`
}

// Cost is the cost of requests matching Method and Path.
type Cost struct {
	Pos    Pos    `yaml:"-"`
	Method string `yaml:"method"`
	Path   string `yaml:"path"`
	Cost   int64  `yaml:"cost"`
}

// Tiers maps identities (the rule's key) to plans, each with its own
// policy.
type Tiers struct {
	Pos Pos `yaml:"-"`
	// Plans name each plan's policy.
	Plans map[string]Policy `yaml:"plans"`
	// Default is the plan of identities not listed. Required.
	Default string `yaml:"default"`
	// Assign maps identities to plan names inline.
	Assign map[string]string `yaml:"assign"`
	// File is a YAML file mapping identities to plan names, merged with
	// Assign (an identity in both is an error).
	File string `yaml:"file"`

	// assigned is Assign merged with File's contents, after validation.
	assigned map[string]string
}

// Assigned returns the identity → plan map from Assign and File together.
func (t *Tiers) Assigned() map[string]string { return t.assigned }

// AccessLog writes one line per request.
type AccessLog struct {
	Pos Pos `yaml:"-"`
	// Path is a file to append to, or "-" for standard output. Empty
	// (the default): no access log.
	Path string `yaml:"path"`
	// Format is "json" (JSON lines, the default) or "combined" (the
	// Apache/nginx combined format with the rule and decision appended).
	Format string `yaml:"format"`
}

// Reload controls watching the configuration file.
type Reload struct {
	Pos Pos `yaml:"-"`
	// Watch polls the file for changes and reloads it. Default true.
	Watch *bool `yaml:"watch"`
	// Interval is the polling period. Default 2s.
	Interval time.Duration `yaml:"interval"`
}
