package rules

import (
	"log/slog"
	"net/netip"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/limit"
)

// Config is the whole rule set of one engine. It is plain data: decode it
// from YAML or JSON (the tags are the configuration names) or build it in
// Go, call Validate, then New. The zero Config is valid and limits nothing.
type Config struct {
	// Rules are evaluated in order; every rule that matches a request
	// applies (they are charged together, all or nothing). Names must be
	// unique.
	Rules []Rule `yaml:"rules" json:"rules"`
	// Except exempts requests from every rule: a request that any entry
	// matches is not counted by any rule and carries no rate-limit
	// header fields. Entries with a key list must name their Key part.
	// An entry matching only what any client can send (a header, a
	// listed value that is no secret) exempts every client that sends
	// it: tollgate check warns about one, unless it is tied to the
	// client (clients, countries, asns) or to a secret (keys of an API
	// key header such as header:X-API-Key). One of only methods, hosts
	// and paths exempts what is requested and is not warned about.
	Except []Except `yaml:"except" json:"except"`
	// ClientIP says how the client address is found.
	ClientIP ClientIP `yaml:"client_ip" json:"client_ip"`
	// Headers says which rate-limit header fields responses carry.
	Headers Headers `yaml:"headers" json:"headers"`
	// Refusal is what a refused request is answered with.
	Refusal Refusal `yaml:"refusal" json:"refusal"`
	// MaxKeyLength bounds the bytes of a client-supplied key part (an API
	// key, a header, a path, ...) kept raw in a store key; a longer part is
	// replaced by its SHA-256 in hex. Zero means 128.
	MaxKeyLength int `yaml:"max_key_length" json:"max_key_length"`
	// KeyCache is how many store keys the engine keeps built, so that a
	// returning client's key is not allocated again. Zero means 65536;
	// negative disables the cache.
	KeyCache int `yaml:"key_cache" json:"key_cache"`
	// MaxDelay caps how long a shaped (delayed) request waits, for rules
	// that do not set their own. Zero means 30s.
	MaxDelay time.Duration `yaml:"max_delay" json:"max_delay"`
	// OnError is the failure mode of every rule that sets none: what it
	// answers when its store fails (Redis down, slow, behind an open
	// breaker, or answering with an error): open, closed or local (the
	// default), the words of package failmode. See OnErrorOf, the one
	// place a rule's mode is decided.
	OnError failmode.Mode `yaml:"on_error" json:"on_error"`
	// OnStoreError is the old spelling of OnError ("allow", "refuse").
	//
	// Deprecated: the old spelling of on_error (allow is open, refuse
	// is closed). Validate and New refuse any value here, naming the
	// on_error to write.
	OnStoreError string `yaml:"on_store_error" json:"on_store_error"`

	// Observer, when set, receives one Event per matching rule of every
	// decided request. Set in code; never decoded.
	Observer Observer `yaml:"-" json:"-"`
	// Logger, when set, receives a line for every shadow refusal and every
	// store error. Set in code; never decoded. Log lines carry rule names,
	// never raw keys.
	Logger *slog.Logger `yaml:"-" json:"-"`
	// Now is the wall clock used for epoch-style reset headers. Nil means
	// time.Now. Set in code; never decoded.
	Now func() time.Time `yaml:"-" json:"-"`
	// Stores, when set, supplies the store of every rule whose
	// Consistency is not the default (New calls it once per such rule; a
	// nil store means the engine's). Return the same store for rules that
	// must be charged together atomically. Nil: every rule uses the
	// engine's store, whatever its tier (a local rule's policies are still
	// divided by its Nodes). Set in code; never decoded.
	Stores StoreFunc `yaml:"-" json:"-"`
	// Slots holds the slots of concurrency policies (algorithm
	// concurrency). New refuses a concurrency policy when it is nil. Set
	// in code; never decoded.
	Slots limit.Slots `yaml:"-" json:"-"`
	// Geo, when set, answers the country and asn key parts and matchers
	// (package geoip's databases, in the gateway). New refuses a rule
	// that uses them when it is nil. Set in code; never decoded.
	Geo Geo `yaml:"-" json:"-"`
	// Scales, when set, finds the adaptive controller a policy names
	// (Policy.Adaptive). New refuses a policy naming one when it is nil,
	// or naming one it does not know. Set in code; never decoded.
	Scales ScaleFunc `yaml:"-" json:"-"`
}

// Rule is one limit: which requests it applies to, how they are grouped
// into keys, what each costs and which policies apply.
type Rule struct {
	// Name identifies the rule in store keys, metrics, logs and (as the
	// default policy name) in headers. Required, unique, and made of
	// letters, digits, '-', '_' and '.'.
	Name string `yaml:"name" json:"name"`
	// Match selects the requests the rule applies to. The zero Match
	// matches every request.
	Match Match `yaml:"match" json:"match"`
	// Except exempts requests from this rule: one that any entry matches
	// is not counted and carries no rate-limit header fields for it. An
	// entry's key list compares the rule's own key value unless the
	// entry names another Key part. An entry matching only what any
	// client can send (a header, a listed value that is no secret)
	// exempts every client that sends it: tollgate check warns about
	// one, as for the top-level except.
	Except []Except `yaml:"except" json:"except"`
	// Key groups requests into counters. The zero Key is the client IP.
	Key Key `yaml:"key" json:"key"`
	// Policies apply to every key of this rule. Exactly one of Policies
	// and Tiers must be set.
	Policies []Policy `yaml:"policies" json:"policies"`
	// Tiers chooses the policies by plan, looked up by identity.
	Tiers *Tiers `yaml:"tiers" json:"tiers"`
	// Cost is what one request charges. The zero Cost charges 1.
	Cost Cost `yaml:"cost" json:"cost"`
	// Count, when set, charges a request only when its answer is one of
	// Count's (the upstream's status, optionally a response header
	// field): the decision is made before the request is served (a key
	// with nothing left is refused at once), the charge after the
	// answer (Result.Charge). No answer (the upstream failed or the
	// client went away) counts as 502; tollgate serve's proxy, on both
	// data paths, goes on with a counting request whose client went
	// away and charges the upstream's answer (up to
	// upstream.response_timeout). Each request admitted reserves its
	// cost on this gateway until its answer is charged, so a key admits
	// at most its limit however many of its requests are in flight
	// (those beyond what is left unreserved are refused with
	// Retry-After 1s, no penalty); across gateways, at most the limit
	// plus what is in flight on the others. A counting rule cannot delay (a leaky_bucket in
	// it needs mode police) nor hold concurrency slots. Nil: every
	// admitted request is charged when it is decided.
	Count *Count `yaml:"count" json:"count"`
	// Penalty is the default Policy.Penalty of the rule's rate policies
	// (concurrency policies take none), e.g. 15m: once refused, a key is
	// refused for this long. The key must have a part a client owns
	// (ip, header, query or ja4): a penalty on a key shared by every
	// client (global, path, method, host, grpc_service, grpc_method,
	// country, asn) is refused. The anonymous bucket (Anonymous) is
	// never penalised. A ja4 key is shared by every user of one TLS
	// stack (a browser version), and so is its penalty.
	Penalty time.Duration `yaml:"penalty" json:"penalty"`
	// Shadow makes the rule count and report but never refuse or delay.
	// Shadow rules are charged separately from enforced ones.
	Shadow bool `yaml:"shadow" json:"shadow"`
	// ShadowHeaders adds a shadow rule's policies to the rate-limit
	// headers. Off by default: a shadow rule is invisible to clients.
	ShadowHeaders bool `yaml:"shadow_headers" json:"shadow_headers"`
	// Anonymous, when true, counts requests that lack the key (e.g. no
	// API key header) in one shared bucket. When false (the default, as in
	// nginx) the rule does not apply to them.
	Anonymous bool `yaml:"anonymous" json:"anonymous"`
	// MaxDelay caps the wait of a request this rule shapes. Zero means
	// Config.MaxDelay.
	MaxDelay time.Duration `yaml:"max_delay" json:"max_delay"`

	// Consistency is the rule's consistency tier, which chooses the store
	// its counters live in (through Config.Stores): "" or
	// ConsistencyDefault (the engine's store, as before tiers existed),
	// ConsistencyStrict (every decision one atomic Redis script),
	// ConsistencyEventual (decided locally, synced with Redis every
	// SyncInterval), ConsistencyGossip (decided locally, the counters
	// shared with the other gateways by gossip, store.gossip in the
	// gateway's file; fixed_window, sliding_window and token_bucket only)
	// or ConsistencyLocal (this process only, the policies divided by
	// Nodes). See the package documentation for what a request matched by
	// rules of several tiers is charged.
	Consistency string `yaml:"consistency" json:"consistency"`
	// OnError is this rule's failure mode, in Config.OnError's words
	// ("open", "closed", "local"). Empty means Config.OnError. Only a
	// strict or a gossip rule takes it: the other tiers either share the
	// engine's store (and so its mode) or decide in this process. A
	// gossip rule answers by it until its gateway is warm (has exchanged
	// state with the fleet): open allows, closed refuses, local decides
	// in this gateway alone, on counts the fleet never hears of.
	OnError failmode.Mode `yaml:"on_error" json:"on_error"`
	// SyncInterval is how often an eventual rule's counts are pushed to
	// and pulled from Redis. Zero means 100ms. Only an eventual rule takes
	// it.
	SyncInterval time.Duration `yaml:"sync_interval" json:"sync_interval"`
	// Nodes is how many gateways share a local rule's limit: each one
	// enforces its share, the policies divided by Nodes
	// (limit.Divide: limits and bursts rounded down, at least one).
	// Zero means 1. Only a local rule takes it.
	Nodes int `yaml:"nodes" json:"nodes"`
}

// Match selects requests. Every non-empty field must match (AND); inside a
// field any entry may match (OR). The zero Match matches everything.
type Match struct {
	// Methods are HTTP methods, e.g. "GET", compared exactly.
	Methods []string `yaml:"methods" json:"methods"`
	// Hosts are host names compared case-insensitively without the port;
	// "*.example.com" matches any subdomain of example.com (not
	// example.com itself).
	Hosts []string `yaml:"hosts" json:"hosts"`
	// Paths are exact paths, e.g. "/login".
	Paths []string `yaml:"paths" json:"paths"`
	// PathPrefixes match a path equal to the prefix or continuing it, e.g.
	// "/api/" matches "/api/x". A prefix is a plain string prefix.
	PathPrefixes []string `yaml:"path_prefixes" json:"path_prefixes"`
	// Patterns are Go 1.22 net/http.ServeMux patterns:
	// "[METHOD ][HOST]/path/{name}/{rest...}", with "{$}" anchoring the
	// end and a trailing "/" matching the subtree. As in ServeMux, GET
	// also matches HEAD.
	Patterns []string `yaml:"patterns" json:"patterns"`
	// Headers must all be present (and equal, when Value is set).
	Headers []HeaderMatch `yaml:"headers" json:"headers"`
	// Clients are client addresses and CIDR prefixes ("192.0.2.7",
	// "10.0.0.0/8", "2001:db8::/32") the client IP (see ClientIP: a
	// forwarding header counts only from a trusted proxy) must be in. A
	// bare address is its own /32 or /128; IPv4-mapped IPv6 compares as
	// IPv4 (a client ::ffff:192.0.2.7 is 192.0.2.7, a prefix
	// ::ffff:10.0.0.0/104 is 10.0.0.0/8). The list is compiled into a
	// sorted table of merged ranges searched by bisection, so 10,000
	// prefixes cost no more per request than a few; at most 1,000,000
	// entries, and a bad or repeated entry is an error.
	Clients []string `yaml:"clients" json:"clients"`
	// Countries are ISO 3166-1 alpha-2 codes ("DE", "US"; either case)
	// the client IP's country (Config.Geo; the geoip section) must be one
	// of. XX is an address the database places in no country.
	Countries []string `yaml:"countries" json:"countries"`
	// ASNs are autonomous system numbers (16509, not "AS16509") the
	// client IP's network (Config.Geo; the geoip section) must be one
	// of. 0 is an address the database places in no AS.
	ASNs []uint32 `yaml:"asns" json:"asns"`
	// JA4 are JA4 fingerprints of the TLS ClientHello (package ja4,
	// "t13d1516h2_8daaf6152771_02713d6af862") the request's connection
	// must have (TLSFingerprint); a request not over TLS has none and
	// does not match. A fingerprint is a TLS stack's, copied easily:
	// use it to group and limit, never to exempt or trust.
	JA4 []string `yaml:"ja4" json:"ja4"`
}

// Except is one exemption entry: the fields of Match (all non-empty ones
// must match), plus client and key lists (also from files). A request
// that an entry of a rule's except matches is exempt from that rule (one
// of the top-level except, from every rule): the rule does not count it
// and adds no rate-limit header fields, as if it did not match. An entry
// with no field set is an error (it would exempt everything).
//
// An entry exempts whoever it matches, so one that matches only what a
// client sends as it likes exempts every client that sends it: a header
// (X-Internal, a User-Agent), or a listed value of a header or query
// parameter that is no secret (header:X-Tenant), or of ja4. `tollgate
// check` warns about such an entry. Tie it to the client (clients or
// clients_file: addresses a forwarding header names only from a trusted
// proxy; countries; asns), or exempt by a secret: keys or keys_file of a
// part that carries a credential (header:X-API-Key, header:Authorization,
// query:api_key: a name saying key, token, secret, password, session,
// signature or auth), or a credential header matched by its value. An
// API key is a secret, so listing the keys that are exempt exempts only
// their holders. An entry of only methods, hosts, paths, path_prefixes
// and patterns exempts what is requested (a health check), for every
// client, and is not warned about.
type Except struct {
	Match `yaml:",inline"`
	// ClientsFile names a file of client addresses and CIDR prefixes, one
	// per line ('#' starts a comment), added to Clients, resolved
	// against the configuration file's directory. The gateway reads it
	// with the configuration and again whenever it changes (as
	// tiers.members_file): a version that does not parse, or is larger
	// than 256 MiB (MaxListFileBytes, as every list file), is refused and
	// the configuration before keeps serving.
	ClientsFile string `yaml:"clients_file" json:"clients_file"`
	// Key is the key part (one of Key's, e.g. "header:X-API-Key") whose
	// value Keys and KeysFile list. Empty: the rule's key value (a rule's
	// entry only).
	Key string `yaml:"key" json:"key"`
	// Keys are key values that are exempt, compared exactly with the
	// key part's raw value (before max_key_length replaces a long one by
	// its hash; a host lower-cased as its key part is). For a rule's own
	// composite key, a value is its parts joined by "\x1f". A key list
	// cannot be of an ip part (list addresses in Clients) or global. At
	// most 1,000,000 entries of at most 4 KiB; an empty or repeated
	// entry is an error.
	Keys []string `yaml:"keys" json:"keys"`
	// KeysFile names a file of key values, one per line (a line
	// starting with '#' is a comment), added to Keys, watched as
	// ClientsFile is.
	KeysFile string `yaml:"keys_file" json:"keys_file"`

	// FileClients and FileKeys are the entries read from ClientsFile and
	// KeysFile (ParseClientsFile, ParseKeysFile) by whoever loads the
	// configuration (package config's EngineConfig): the rule engine
	// reads no files, and New refuses an entry naming a file whose
	// entries are nil (not loaded).
	FileClients []string `yaml:"-" json:"-"`
	FileKeys    []string `yaml:"-" json:"-"`
}

// Count says which answers a counting rule (Rule.Count) charges: every
// non-empty field must match.
type Count struct {
	// Statuses are status codes ("401"), classes ("4xx") and inclusive
	// ranges ("500-599") of the upstream's answer, codes 100-599, at
	// most 64 entries. Empty: any status (then Header must be set).
	Statuses []string `yaml:"statuses" json:"statuses"`
	// Header, when its Name is set, is a response header field the
	// answer must carry (equal to Value when Value is set). Only the
	// answer's head is read, when it arrives: a trailer is not, so a
	// gRPC call's Grpc-Status is seen on a trailers-only answer (an
	// error with no message) and not after a streamed call's messages.
	Header HeaderMatch `yaml:"header" json:"header"`
}

// Geo says where a client address is. Implementations are safe for
// concurrent use and do not allocate.
type Geo interface {
	// Country is the address's ISO 3166-1 alpha-2 code, upper case, or
	// "" when unknown.
	Country(a netip.Addr) string
	// ASN is the address's autonomous system number, or 0 when unknown.
	ASN(a netip.Addr) uint32
}

// HeaderMatch requires a request header field.
type HeaderMatch struct {
	// Name is the field name, case-insensitive.
	Name string `yaml:"name" json:"name"`
	// Value, when non-empty, must equal the field's value exactly: its
	// first line, when the request can tell lines apart (FirstHeader),
	// else all lines joined with ", ". Empty means "present and
	// non-empty".
	Value string `yaml:"value" json:"value"`
}

// Key says how a rule groups requests into counters: the values of its
// parts, joined. The zero Key is the client IP.
//
// Each part is one of:
//
//	ip             the client IP (see ClientIP), aggregated to its prefix
//	header:NAME    a request header's value, e.g. "header:X-API-Key"
//	query:NAME     a query parameter, e.g. "query:api_key"
//	path           the request path
//	method         the request method
//	host           the host, lower-cased, without port
//	global         nothing: one counter for all the rule's requests, as
//	               envoyproxy/ratelimit's descriptor without a value or
//	               a constant key in nginx's limit_req_zone (to cap what
//	               reaches an origin whoever sends it)
//	grpc_service   a gRPC request's service, "package.Service" of the
//	               path /package.Service/Method (see GRPCMethod)
//	grpc_method    a gRPC request's service and method,
//	               "package.Service/Method"
//	country        the client IP's country code (Config.Geo; the geoip
//	               section), "DE"; "XX" when the database places the
//	               address in no country (counted together, never
//	               missing, unlike nginx's empty geoip2 default)
//	asn            the client IP's autonomous system number, "64496";
//	               "0" when the database places it in none
//	ja4            the JA4 fingerprint of the connection's TLS
//	               ClientHello (TLSFingerprint); missing when not TLS
//
// A part that is missing from the request (no such header or parameter)
// makes the whole key missing: the rule then does not apply unless
// Rule.Anonymous is set.
type Key []string

// Policy is one algorithm with its parameters, as configuration. See
// package limit for the algorithms' exact semantics; this is only their
// spelling.
type Policy struct {
	// Name is the policy's name in RateLimit-Policy headers and in the
	// violated-policies of a refusal. Empty means the rule's name, with
	// "-2", "-3", ... appended to the second and later policies of a rule
	// (for a tier: "rule-plan", "rule-plan-2", ...). Names are made of
	// letters, digits, '-', '_' and '.', and are unique within a rule.
	Name string `yaml:"name" json:"name"`
	// Algorithm is fixed_window, sliding_log, sliding_window,
	// token_bucket or leaky_bucket (limit.ParseAlgorithm), or concurrency
	// (at most Limit requests of a key in flight at once; see
	// RetryAfter). Empty means token_bucket.
	Algorithm string `yaml:"algorithm" json:"algorithm"`
	// Rate is COUNT/PERIOD (limit.ParseRate, e.g. "100/s", "7/90s") for
	// token_bucket and leaky_bucket. For the window algorithms Rate may
	// be given instead of Limit and Window: "100/m" is limit 100, window
	// 1m.
	Rate string `yaml:"rate" json:"rate"`
	// Burst is the token bucket's capacity (zero: the rate's count) or
	// the leaky bucket's excess (nginx burst=N).
	Burst int64 `yaml:"burst" json:"burst"`
	// Limit is the window algorithms' count: how many units a key may
	// spend per Window. For concurrency: how many requests of a key may
	// be in flight at once.
	Limit int64 `yaml:"limit" json:"limit"`
	// Window is the window algorithms' span, in limit.ParsePeriod syntax
	// ("1m", "90s", "7d").
	Window string `yaml:"window" json:"window"`
	// Mode is the leaky bucket's mode: "shape" (the default: excess
	// requests are delayed) or "police" (alias "nodelay": never delay).
	Mode string `yaml:"mode" json:"mode"`
	// Delay is the leaky bucket's nginx delay=N: in shape mode the first
	// N excess requests pass undelayed.
	Delay int64 `yaml:"delay" json:"delay"`
	// Adaptive names an adaptive controller (the file's adaptive
	// section; Config.Scales in code) whose factor scales this policy:
	// its limit, burst and rate multiplied by the factor, between the
	// controller's floor and the policy as written (the base). Headers
	// report the scaled quota. Empty: the policy is static.
	Adaptive string `yaml:"adaptive" json:"adaptive"`
	// Penalty, when positive, refuses a key for this long once the
	// policy has refused it (Cloudflare's mitigation timeout, fail2ban's
	// ban time), with a Retry-After of the time the penalty has left;
	// further refusals do not extend it. It is kept in the policy's
	// store, beside its counter, so it holds across gateways as the
	// counter does. Between 1s and 720h (30 days); not on a concurrency
	// policy, nor on a rule whose key no client owns (see Rule.Penalty).
	// Zero: the rule's Penalty; none when that is zero too.
	Penalty time.Duration `yaml:"penalty" json:"penalty"`
	// RetryAfter is a concurrency policy's Retry-After on a refusal
	// (algorithm concurrency: at most Limit requests of a key in flight;
	// no other algorithm takes it). Zero means 1s.
	RetryAfter time.Duration `yaml:"retry_after" json:"retry_after"`
}

// Tiers chooses a rule's policies by plan: an identity (taken from the
// request with Identity) is looked up in Members (and MembersFile) to find
// its plan; unknown identities get Default.
type Tiers struct {
	// Identity is the key whose value is looked up in the plan map. Empty
	// means the rule's Key. It should be one part (e.g. header:X-API-Key):
	// the value of a composite is its parts joined by 0x1F, which plan map
	// files cannot easily spell.
	Identity Key `yaml:"identity" json:"identity"`
	// Plans maps a plan name (free, pro, enterprise, ...) to its policies.
	Plans map[string][]Policy `yaml:"plans" json:"plans"`
	// Members maps an identity (e.g. an API key) to a plan name.
	Members map[string]string `yaml:"members" json:"members"`
	// MembersFile, when set, is a file of more members (see ParsePlanMap
	// for its format), resolved against the configuration file's
	// directory. Entries in Members win.
	MembersFile string `yaml:"members_file" json:"members_file"`
	// FileMembers are the members read from MembersFile by whoever loads
	// the configuration (package config's EngineConfig): the rule engine
	// reads no files, and decides with FileMembers and Members.
	FileMembers map[string]string `yaml:"-" json:"-"`
	// Default is the plan of identities found in neither. Required.
	Default string `yaml:"default" json:"default"`
}

// Cost is what a request charges against every policy of its rule: the
// Cost of the first entry of By whose Match matches, else Default.
type Cost struct {
	// Default is the cost when no entry of By matches. Zero means 1.
	Default int64 `yaml:"default" json:"default"`
	// By lists costs by request shape, first match wins, e.g. a search
	// costs 5 (Match{Paths: ["/search"]}) and a read costs 1.
	By []CostBy `yaml:"by" json:"by"`
}

// CostBy is a cost for requests matching Match.
type CostBy struct {
	// Match selects the requests that cost Cost (the same keys as a
	// rule's match).
	Match Match `yaml:"match" json:"match"`
	// Cost must be positive.
	Cost int64 `yaml:"cost" json:"cost"`
}

// ClientIP says how the client address is found. The zero value trusts no
// proxy: the client is the TCP peer, whatever the headers say.
type ClientIP struct {
	// TrustedProxies are CIDRs ("10.0.0.0/8", "::1/128") or bare
	// addresses of proxies whose forwarding header is believed. Empty by
	// default: no proxy is trusted.
	TrustedProxies []string `yaml:"trusted_proxies" json:"trusted_proxies"`
	// Header is the one forwarding header the trusted proxies set:
	// "X-Forwarded-For" (the default), "Forwarded" (RFC 7239) or
	// "X-Real-IP". Only one is read, so a client cannot smuggle an
	// address through a header the proxy passes along untouched. The list
	// is walked right to left, past trusted hops; the first untrusted
	// address is the client.
	Header string `yaml:"header" json:"header"`
	// IPv6Prefix aggregates IPv6 clients to this prefix length. Zero means
	// 64; 128 keeps whole addresses.
	IPv6Prefix int `yaml:"ipv6_prefix" json:"ipv6_prefix"`
	// IPv4Prefix aggregates IPv4 clients to this prefix length. Zero means
	// 32 (whole addresses).
	IPv4Prefix int `yaml:"ipv4_prefix" json:"ipv4_prefix"`
}

// Header styles, the values of Headers.Styles.
const (
	// StyleDraft10 is draft-ietf-httpapi-ratelimit-headers-10:
	// RateLimit-Policy listing every applied policy and RateLimit for the
	// most restrictive one.
	StyleDraft10 = "draft10"
	// StyleDraft6 is the older RateLimit-Limit, RateLimit-Remaining and
	// RateLimit-Reset (delta seconds) of drafts -00 to -06.
	StyleDraft6 = "draft6"
	// StyleLegacy is X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset (see Headers.Reset).
	StyleLegacy = "legacy"
)

// Headers says which rate-limit fields responses carry. Retry-After is
// always sent on a refusal.
type Headers struct {
	// Styles lists the header styles to send: StyleDraft10, StyleDraft6,
	// StyleLegacy. Nil means [draft10]; an empty non-nil list (or
	// ["none"]) sends none.
	Styles []string `yaml:"styles" json:"styles"`
	// Reset is the X-RateLimit-Reset form: "epoch" (Unix seconds, as
	// GitHub; the default) or "delta" (seconds from now).
	Reset string `yaml:"reset" json:"reset"`
}

// ProblemQuotaExceeded is the problem type of a refusal by default
// (draft-ietf-httpapi-ratelimit-headers).
const ProblemQuotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"

// Refusal is how a refused request is answered.
type Refusal struct {
	// Status is the refusal status, 400-599. Zero means 429 (nginx uses
	// 503).
	Status int `yaml:"status" json:"status"`
	// Type is the problem type URI. Empty means ProblemQuotaExceeded.
	Type string `yaml:"type" json:"type"`
	// Title is the problem title. Empty means the status text ("Too Many
	// Requests").
	Title string `yaml:"title" json:"title"`
	// Detail is the problem detail. Empty means a sentence naming the
	// retry delay.
	Detail string `yaml:"detail" json:"detail"`
	// Body, when set, replaces the problem+json body: a text/template
	// executed with a RefusalData, answered with ContentType.
	Body string `yaml:"body" json:"body"`
	// ContentType is the Content-Type of a custom Body. Empty means
	// "text/plain; charset=utf-8".
	ContentType string `yaml:"content_type" json:"content_type"`
	// ErrorStatus answers requests refused because the store returned an
	// error and a matching rule's failure mode is "closed". Zero means
	// 503. (A Redis store answers its own failures by the rule's mode, as
	// a 429 with Retry-After; ErrorStatus is for errors that reach the
	// engine.)
	ErrorStatus int `yaml:"error_status" json:"error_status"`
}

// RefusalData is what a custom Refusal.Body template sees.
type RefusalData struct {
	Status           int
	RetryAfter       int64 // seconds, rounded up
	ViolatedPolicies []string
	Path             string
	Limit            int64
	Remaining        int64
}
