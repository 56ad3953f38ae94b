package main

// envoyproxy/ratelimit's environment, read as upstream reads it: the
// command's settings (envoyRLSEnv), the answers' (envoyRLSAnswerEnv) and
// the counting's (envoyRLSCountingEnv). envoy.go runs the service on them.

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/envoyrls"
	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/store/redis/redisconf"
)

// envoyRLSSettings are the command's settings, from the environment and
// then the flags.
type envoyRLSSettings struct {
	dir, grpc, http, debug, redis string
	redisUser, redisPassword      string
	redisMaster                   string             // REDIS_TYPE=sentinel: the master set's name
	redisTLS                      bool               // REDIS_TLS
	redisTLSFiles                 redisconf.TLSFiles // REDIS_TLS_CACERT, _CLIENT_CERT, _CLIENT_KEY, _SKIP_HOSTNAME_VERIFICATION
	counting                      rlsCounting        // envoyRLSCountingEnv
	redisTimeout                  time.Duration      // -redis-timeout
	headers                       string
	limitH, remainingH, resetH    string
	allOrNothing                  bool
	nearRatio                     float64
	tier                          string
	style                         envoyrls.HeaderStyle
	reload                        time.Duration

	// The answers' settings (envoyRLSAnswerEnv).
	shadow, quota, merge bool     // SHADOW_MODE, QUOTA_MODE, MERGE_DOMAIN_CONFIG
	dotFiles             bool     // read files named .*: RUNTIME_IGNOREDOTFILES unset or false
	logLevel, logFormat  string   // LOG_LEVEL, LOG_FORMAT, as -log-level and -log-format
	unsupported          []string // variables set that tollgate does not honour: logged at start
}

// envoyRLSEnv reads envoyproxy/ratelimit's environment variables. A
// value it cannot use is an error, never a silent default. Of the Redis
// ones (docs/redis.md lists them all) it honours REDIS_SOCKET_TYPE (tcp
// only), REDIS_URL, REDIS_TYPE (SINGLE, CLUSTER, or SENTINEL with
// REDIS_URL "MASTERNAME,HOST:PORT,..."), REDIS_AUTH ([user:]password),
// REDIS_TLS, REDIS_TLS_CACERT, REDIS_TLS_CLIENT_CERT, REDIS_TLS_CLIENT_KEY
// and REDIS_TLS_SKIP_HOSTNAME_VERIFICATION, with envoyproxy/ratelimit's
// meanings, except that REDIS_TLS_CACERT replaces the system's
// authorities rather than adding to them.
func envoyRLSEnv(getenv func(string) string) (envoyRLSSettings, error) {
	s := envoyRLSSettings{dir: ".", grpc: ":8081", http: ":8080", debug: ":6070"}
	var errs []error
	if root := getenv("RUNTIME_ROOT"); root != "" {
		app := getenv("RUNTIME_APPDIRECTORY")
		if app == "" {
			app = "config"
		}
		s.dir = filepath.Join(root, getenv("RUNTIME_SUBDIRECTORY"), app)
	}
	addr := func(hostVar, portVar, def string) string {
		host, port := getenv(hostVar), getenv(portVar)
		if host == "" && port == "" {
			return def
		}
		if port == "" {
			_, port, _ = net.SplitHostPort(def)
		} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: not a port", portVar, port))
		}
		return net.JoinHostPort(host, port)
	}
	s.grpc = addr("GRPC_HOST", "GRPC_PORT", s.grpc)
	s.http = addr("HOST", "PORT", s.http)
	s.debug = addr("DEBUG_HOST", "DEBUG_PORT", s.debug)
	if u := getenv("REDIS_URL"); u != "" {
		if t := getenv("REDIS_SOCKET_TYPE"); t != "tcp" {
			errs = append(errs, fmt.Errorf("REDIS_URL with REDIS_SOCKET_TYPE=%q: only tcp is supported (set REDIS_SOCKET_TYPE=tcp)", t))
		}
		s.redis = u
	}
	switch t := strings.ToLower(getenv("REDIS_TYPE")); t {
	case "", "single", "cluster":
		// One address, or several seeds of a Cluster: the client
		// detects which.
	case "sentinel":
		// "mastername,host:port,host:port": the master set, then the
		// Sentinels.
		name, sentinels, ok := strings.Cut(s.redis, ",")
		if !ok || name == "" || sentinels == "" {
			errs = append(errs, errors.New("REDIS_TYPE=sentinel: REDIS_URL must be MASTERNAME,HOST:PORT[,HOST:PORT...]"))
		}
		s.redisMaster, s.redis = name, sentinels
	default:
		errs = append(errs, fmt.Errorf("REDIS_TYPE=%q: want SINGLE, CLUSTER or SENTINEL", t))
	}
	if a := getenv("REDIS_AUTH"); a != "" {
		if user, pass, ok := strings.Cut(a, ":"); ok {
			s.redisUser, s.redisPassword = user, pass
		} else {
			s.redisPassword = a
		}
	}
	errs = append(errs, envoyRLSCountingEnv(getenv, &s.counting)...)
	boolVar := func(name string) bool { return envBool(getenv, name, &errs) }
	s.redisTLS = boolVar("REDIS_TLS")
	s.redisTLSFiles = redisconf.TLSFiles{
		CAFile: getenv("REDIS_TLS_CACERT"), CertFile: getenv("REDIS_TLS_CLIENT_CERT"), KeyFile: getenv("REDIS_TLS_CLIENT_KEY"),
		SkipHostnameVerification: boolVar("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION"),
	}
	if !s.redisTLS && s.redisTLSFiles != (redisconf.TLSFiles{}) {
		errs = append(errs, errors.New("REDIS_TLS_* is set but REDIS_TLS is not true"))
	}
	s.limitH, s.remainingH, s.resetH = getenv("LIMIT_LIMIT_HEADER"), getenv("LIMIT_REMAINING_HEADER"), getenv("LIMIT_RESET_HEADER")
	s.allOrNothing = boolVar("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT")
	if v := getenv("NEAR_LIMIT_RATIO"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r <= 0 || r > 1 {
			errs = append(errs, fmt.Errorf("NEAR_LIMIT_RATIO=%q: want a number in (0, 1]", v))
		}
		s.nearRatio = r
	}
	errs = append(errs, envoyRLSAnswerEnv(getenv, &s)...)
	return s, errors.Join(errs...)
}

// ---- The answers' environment: the response headers, the global
// shadow and quota modes, merged domains, logging, and the variables
// tollgate does not honour. (The counting's variables are read above.)

// envBool is the boolean environment variable name (strconv.ParseBool's
// spellings), false when unset; a value that is not one is appended to
// errs.
func envBool(getenv func(string) string, name string, errs *[]error) bool {
	v := getenv(name)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("%s=%q: not a boolean", name, v))
	}
	return b
}

// envoyRLSAnswerEnv reads into s envoyproxy/ratelimit's variables that
// change what the answers say, with its defaults: SHADOW_MODE,
// QUOTA_MODE, MERGE_DOMAIN_CONFIG, RUNTIME_IGNOREDOTFILES (false: the
// files and directories named .* are configuration too), LIMIT_RESPONSE_HEADERS_ENABLED (false:
// no rate-limit headers at all; true: its RateLimit-Limit trio), LOG_LEVEL
// (default warn) and LOG_FORMAT; tollgate's own TOLLGATE_RESPONSE_HEADERS
// (none, legacy or draft10) chooses a style whatever
// LIMIT_RESPONSE_HEADERS_ENABLED says. A variable tollgate does not
// honour is an error when ignoring it would serve something else than
// asked (another listener, TLS, a configuration source or backend), and
// otherwise listed in s.unsupported to be logged at start; none is
// ignored silently. GLOBAL_SHADOW_MODE, a name only earlier tollgates
// read, is an error naming SHADOW_MODE.
func envoyRLSAnswerEnv(getenv func(string) string, s *envoyRLSSettings) []error {
	var errs []error
	boolVar := func(name string) bool { return envBool(getenv, name, &errs) }
	s.shadow = boolVar("SHADOW_MODE")
	s.quota = boolVar("QUOTA_MODE")
	s.merge = boolVar("MERGE_DOMAIN_CONFIG")
	s.dotFiles = !boolVar("RUNTIME_IGNOREDOTFILES")
	if getenv("GLOBAL_SHADOW_MODE") != "" {
		errs = append(errs, errors.New("GLOBAL_SHADOW_MODE is not read: envoyproxy/ratelimit's global shadow switch is SHADOW_MODE"))
	}
	s.headers = "none"
	if boolVar("LIMIT_RESPONSE_HEADERS_ENABLED") {
		s.headers = "legacy"
	}
	if v := getenv("TOLLGATE_RESPONSE_HEADERS"); v != "" {
		if _, err := envoyrls.ParseHeaderStyle(v); err != nil {
			errs = append(errs, fmt.Errorf("TOLLGATE_RESPONSE_HEADERS: %v", err))
		}
		s.headers = v
	}
	// logrus's levels, as envoyproxy/ratelimit parses LOG_LEVEL, onto
	// slog's.
	s.logLevel = "warn"
	if v := getenv("LOG_LEVEL"); v != "" {
		switch strings.ToLower(v) {
		case "trace", "debug":
			s.logLevel = "debug"
		case "info":
			s.logLevel = "info"
		case "warn", "warning":
			s.logLevel = "warn"
		case "error", "fatal", "panic":
			s.logLevel = "error"
		default:
			errs = append(errs, fmt.Errorf("LOG_LEVEL=%q: want trace, debug, info, warn, error, fatal or panic", v))
		}
	}
	s.logFormat = "text"
	if v := getenv("LOG_FORMAT"); v != "" {
		if v != "text" && v != "json" {
			errs = append(errs, fmt.Errorf("LOG_FORMAT=%q: want text or json", v))
		}
		s.logFormat = v
	}
	for _, u := range envoyRLSUnsupported {
		v := getenv(u.name)
		if v == "" || v == u.fine {
			continue
		}
		if u.refuse {
			errs = append(errs, fmt.Errorf("%s=%q is not supported by tollgate envoy-rls: %s", u.name, v, u.why))
			continue
		}
		s.unsupported = append(s.unsupported, fmt.Sprintf("%s=%q is not honoured: %s", u.name, v, u.why))
	}
	for _, prefix := range []string{"CONFIG_GRPC_XDS_", "XDS_CLIENT_", "MEMCACHE_", "TRACING_", "REDIS_PERSECOND_"} {
		for _, kv := range envoyRLSEnviron() {
			name, v, _ := strings.Cut(kv, "=")
			if strings.HasPrefix(name, prefix) && v != "" && v != "false" && name != "REDIS_PERSECOND_TIMEOUT" && !envoyRLSListed(name) {
				s.unsupported = append(s.unsupported, fmt.Sprintf("%s is not honoured: tollgate has no %s settings", name, strings.TrimSuffix(prefix, "_")))
			}
		}
	}
	return errs
}

// envoyRLSEnviron is the process's environment, for the families of
// variables read by prefix; a variable for tests.
var envoyRLSEnviron = os.Environ

// envoyRLSUnsupported are envoyproxy/ratelimit's settings (settings.go)
// tollgate does not honour, with the value that asks for nothing (fine),
// and whether ignoring the rest would serve something else than asked
// (refuse) or only lack a feature.
var envoyRLSUnsupported = []struct {
	name, fine, why string
	refuse          bool
}{
	{"GRPC_UDS", "", "listen with -grpc on a TCP address", true},
	{"GRPC_SERVER_USE_TLS", "false", "the gRPC listener is plaintext: terminate TLS in front of it", true},
	{"GRPC_SERVER_TLS_CERT", "", "the gRPC listener is plaintext", true},
	{"GRPC_SERVER_TLS_KEY", "", "the gRPC listener is plaintext", true},
	{"GRPC_CLIENT_TLS_CACERT", "", "the gRPC listener is plaintext", true},
	{"GRPC_CLIENT_TLS_SAN", "", "the gRPC listener is plaintext", true},
	{"CONFIG_TYPE", "FILE", "only FILE (the configuration directory) is read; no xDS", true},
	{"BACKEND_TYPE", "redis", "the backend is Redis (REDIS_URL) or memory; no memcache", true},
	{"GRPC_MAX_CONNECTION_AGE", "", "gRPC connections are not aged", false},
	{"GRPC_MAX_CONNECTION_AGE_GRACE", "", "gRPC connections are not aged", false},
	{"FORCE_START_WITHOUT_INITIAL_CONFIG", "false", "the directory's configuration must load at start", false},
	{"USE_STATSD", "false", "no statsd: metrics are Prometheus's, on -debug's /metrics", false},
	{"USE_DOG_STATSD", "false", "no statsd: metrics are Prometheus's, on -debug's /metrics", false},
	{"USE_DOG_STATSD_MOGRIFIERS", "", "no statsd", false},
	{"STATSD_HOST", "", "no statsd", false},
	{"STATSD_PORT", "", "no statsd", false},
	{"EXTRA_TAGS", "", "no statsd tags", false},
	{"STATS_FLUSH_INTERVAL", "", "Prometheus metrics are read when scraped", false},
	{"DISABLE_STATS", "false", "metrics are always counted", false},
	{"USE_PROMETHEUS", "", "metrics are Prometheus's, on -debug's /metrics, always", false},
	{"PROMETHEUS_ADDR", "", "metrics are on -debug's /metrics (DEBUG_HOST, DEBUG_PORT)", false},
	{"PROMETHEUS_PATH", "/metrics", "metrics are on -debug's /metrics", false},
	{"PROMETHEUS_MAPPER_YAML", "", "metric names are tollgate_rls_*", false},
	{"HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", "false", "healthy once the configuration loaded at start", false},
	{"RESPONSE_DYNAMIC_METADATA", "false", "answers carry no dynamic_metadata", false},
	{"REDIS_POOL_SIZE", "", "the Redis client sizes its own pool", false},
	{"REDIS_PIPELINE_WINDOW", "", "the Redis client pipelines on its own", false},
	{"REDIS_PIPELINE_LIMIT", "", "the Redis client pipelines on its own", false},
	{"REDIS_PERSECOND", "false", "per-second limits count on REDIS_URL's Redis too", false},
	{"REDIS_SENTINEL_AUTH", "", "Sentinels are reached without a password", false},
	{"REDIS_HEALTH_CHECK_ACTIVE_CONNECTION", "false", "health does not follow the Redis connection", false},
	{"REDIS_POOL_ON_EMPTY_BEHAVIOR", "WAIT", "the Redis client waits for a connection", false},
}

func envoyRLSListed(name string) bool {
	for _, u := range envoyRLSUnsupported {
		if u.name == name {
			return true
		}
	}
	return false
}

// envoyRLSLogDefaults makes LOG_LEVEL and LOG_FORMAT the defaults of
// -log-level and -log-format.
func envoyRLSLogDefaults(fs *flag.FlagSet, s envoyRLSSettings) {
	for name, v := range map[string]string{"log-level": s.logLevel, "log-format": s.logFormat} {
		if f := fs.Lookup(name); f != nil && v != "" {
			f.Value.Set(v)
			f.DefValue = v
		}
	}
}

// ---- end of the answers' environment.

// ---- The counting's environment: how descriptors are counted and
// where, and what a Redis failure answers (envoyrls.Charging). The
// answers' settings are read above.

// rlsCounting are envoyproxy/ratelimit's settings about its
// counters, and tollgate's TOLLGATE_REDIS_ON_ERROR.
type rlsCounting struct {
	redisTimeout   time.Duration // REDIS_TIMEOUT: the default of -redis-timeout
	cacheKeyPrefix string        // CACHE_KEY_PREFIX
	localCache     int           // LOCAL_CACHE_SIZE_IN_BYTES
	jitter         time.Duration // EXPIRATION_JITTER_MAX_SECONDS
	onError        failmode.Mode // TOLLGATE_REDIS_ON_ERROR: "" (an error, as upstream), open, closed, local
	notes          []string      // settings read but not honoured, logged at start
}

// envoyRLSCountingEnv reads into c, with envoyproxy/ratelimit's
// defaults: REDIS_TIMEOUT (10s: the bound of a connection attempt and of
// each round trip, after which the call fails), CACHE_KEY_PREFIX (""),
// LOCAL_CACHE_SIZE_IN_BYTES (0: no local cache),
// EXPIRATION_JITTER_MAX_SECONDS (300), and REDIS_PERSECOND_TIMEOUT
// (per-second limits count on REDIS_URL's Redis, so it is noted, not
// honoured). STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT is read above.
// TOLLGATE_REDIS_ON_ERROR (open, closed or local; unset: the call fails,
// as envoyproxy/ratelimit's, and Envoy's failure_mode_deny decides) is
// tollgate's.
func envoyRLSCountingEnv(getenv func(string) string, c *rlsCounting) []error {
	var errs []error
	duration := func(name string, def time.Duration) time.Duration {
		v := getenv(name)
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a positive duration such as 10s", name, v))
			return def
		}
		return d
	}
	integer := func(name string, def int64) int64 {
		v := getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a whole number, 0 or more", name, v))
			return def
		}
		return n
	}
	c.redisTimeout = duration("REDIS_TIMEOUT", 10*time.Second)
	if getenv("REDIS_PERSECOND_TIMEOUT") != "" {
		duration("REDIS_PERSECOND_TIMEOUT", 0)
		c.notes = append(c.notes, "REDIS_PERSECOND_TIMEOUT is not honoured: per-second limits count on REDIS_URL's Redis, within REDIS_TIMEOUT")
	}
	c.cacheKeyPrefix = getenv("CACHE_KEY_PREFIX")
	c.localCache = int(min(integer("LOCAL_CACHE_SIZE_IN_BYTES", 0), 1<<40))
	c.jitter = time.Duration(min(integer("EXPIRATION_JITTER_MAX_SECONDS", 300), 1<<31)) * time.Second
	if c.onError = failmode.Mode(getenv("TOLLGATE_REDIS_ON_ERROR")); c.onError != failmode.Unset && !c.onError.Known() {
		errs = append(errs, fmt.Errorf("TOLLGATE_REDIS_ON_ERROR=%q: want open, closed or local (unset: the call fails, as envoyproxy/ratelimit's)", c.onError))
	}
	return errs
}

// ---- end of the counting's environment.
