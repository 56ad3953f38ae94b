package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/envoyrls"
	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/store/redis"
	"github.com/tollgate-dev/tollgate/store/redis/redisconf"
	stores "github.com/tollgate-dev/tollgate/storeopen"
)

var envoyRLSCommand = &command{
	Name:  "envoy-rls",
	Args:  "",
	Short: "run Envoy's rate limit service (gRPC, envoyproxy/ratelimit's YAML) on tollgate's stores",
	Flags: func(fs *flag.FlagSet) func(context.Context, []string, io.Writer, io.Writer) int {
		env, envErr := envoyRLSEnv(os.Getenv)
		fs.StringVar(&env.dir, "config-dir", env.dir, "`directory` of envoyproxy/ratelimit configuration files, one domain per file (default $RUNTIME_ROOT/$RUNTIME_SUBDIRECTORY/$RUNTIME_APPDIRECTORY, APPDIRECTORY defaulting to config)")
		fs.StringVar(&env.grpc, "grpc", env.grpc, "gRPC listener `address` (default from GRPC_HOST, GRPC_PORT)")
		fs.StringVar(&env.http, "http", env.http, "HTTP listener `address` (/json, /healthcheck), or off (default from HOST, PORT)")
		fs.StringVar(&env.debug, "debug", env.debug, "debug listener `address` (/metrics, /debug/pprof/), or off (default from DEBUG_HOST, DEBUG_PORT)")
		fs.StringVar(&env.redis, "redis", env.redis, "Redis `addresses` (host:port, comma-separated); empty decides in memory (default REDIS_URL, with REDIS_SOCKET_TYPE=tcp; REDIS_AUTH is [user:]password; REDIS_TYPE=sentinel, REDIS_TLS and REDIS_TLS_* as envoyproxy/ratelimit reads them)")
		tier := fs.String("redis-tier", "strict", "with -redis: strict (every decision in Redis) or eventual (local, synced)")
		fs.DurationVar(&env.redisTimeout, "redis-timeout", env.counting.redisTimeout, "with -redis: the bound of a Redis round trip, past which the call fails (default REDIS_TIMEOUT, else 10s)")
		headers := fs.String("headers", env.headers, "response headers: none, legacy (RateLimit-Limit/-Remaining/-Reset, named by LIMIT_LIMIT_HEADER, LIMIT_REMAINING_HEADER, LIMIT_RESET_HEADER) or draft10 (tollgate's RateLimit-Policy and RateLimit) (default legacy when LIMIT_RESPONSE_HEADERS_ENABLED=true, else none; TOLLGATE_RESPONSE_HEADERS names a style)")
		fs.BoolVar(&env.allOrNothing, "all-or-nothing", env.allOrNothing, "when a descriptor of a request would go over its limit, increment only those going over, as envoyproxy/ratelimit does (default STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT; NEAR_LIMIT_RATIO, SHADOW_MODE, QUOTA_MODE, MERGE_DOMAIN_CONFIG, RUNTIME_IGNOREDOTFILES, LOG_LEVEL and LOG_FORMAT are read too)")
		reload := fs.Duration("reload", 100*time.Millisecond, "how often the configuration directory is looked at for changes (file names, sizes, times; contents every second)")
		logger := logFlags(fs)
		envoyRLSLogDefaults(fs, env)
		return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			if envErr != nil {
				fmt.Fprintf(stderr, "tollgate envoy-rls: %v\n", envErr)
				return exitUsage
			}
			if len(args) > 0 {
				fmt.Fprintf(stderr, "usage: tollgate envoy-rls [flags]\n")
				return exitUsage
			}
			log, err := logger(stderr)
			if err != nil {
				fmt.Fprintf(stderr, "tollgate envoy-rls: %v\n", err)
				return exitUsage
			}
			style, err := envoyrls.ParseHeaderStyle(*headers)
			if err != nil {
				fmt.Fprintf(stderr, "tollgate envoy-rls: -headers: %v\n", err)
				return exitUsage
			}
			if *tier != "strict" && *tier != "eventual" {
				fmt.Fprintf(stderr, "tollgate envoy-rls: -redis-tier %q: want strict or eventual\n", *tier)
				return exitUsage
			}
			env.tier, env.style, env.reload = *tier, style, *reload
			return runEnvoyRLS(ctx, env, log, stderr)
		}
	},
}

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

// openEnvoyRLSStore opens the store s names through package storeopen, as
// serve and forward-auth open theirs: memory by default, else Redis at
// the strict or the eventual tier, Redis failures answered by the
// default on_error (local: decided in memory). Closing the Set closes
// the store.
func openEnvoyRLSStore(s envoyRLSSettings, log *slog.Logger) (limit.Store, *stores.Set, error) {
	var set *stores.Set
	var err error
	if s.redis == "" {
		set, err = stores.Open(config.Store{}, log)
	} else {
		rc := redis.Config{Addrs: strings.Split(s.redis, ","), MasterName: s.redisMaster, Username: s.redisUser, Password: s.redisPassword, Timeout: s.redisTimeout, FlushDelay: envoyRLSFlushDelay}
		if s.redisTLS {
			if rc.TLS, err = s.redisTLSFiles.Load(time.Now()); err != nil {
				return nil, nil, fmt.Errorf("redis: REDIS_TLS_*: %w", err)
			}
		}
		set, err = stores.OpenRedis(rc, log)
	}
	if err != nil {
		return nil, nil, err
	}
	mode := failmode.Of(s.counting.onError) // the tollgate_algorithm limits' failure mode; unset: the default, local
	st := set.Default(mode)
	if s.redis != "" {
		tier := rules.ConsistencyStrict
		if s.tier == "eventual" {
			tier = rules.ConsistencyEventual
		}
		st, err = set.Tier(rules.Rule{Consistency: tier}, mode)
	}
	if err != nil {
		set.Close()
		return nil, nil, err
	}
	return st, set, nil
}

func runEnvoyRLS(ctx context.Context, s envoyRLSSettings, log *slog.Logger, stderr io.Writer) int {
	for _, u := range s.unsupported {
		log.Warn(u)
	}
	opts := envoyrls.Options{MergeDomains: s.merge, DotFiles: s.dotFiles}
	srcs, err := envoyrls.ReadDirWith(s.dir, opts)
	var limits *envoyrls.Limits
	if err == nil {
		limits, err = envoyrls.BuildWith(srcs, opts)
	}
	if err != nil {
		if ps := envoyrls.Problems(err); len(ps) > 0 {
			for _, p := range ps {
				fmt.Fprintln(stderr, p)
			}
		} else {
			fmt.Fprintf(stderr, "tollgate envoy-rls: %v\n", err)
		}
		return exitFail
	}
	st, set, err := openEnvoyRLSStore(s, log)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate envoy-rls: store: %v\n", err)
		return exitFail
	}
	defer set.Close()
	reg := prometheus.NewRegistry()
	metrics, err := envoyrls.NewMetrics(reg, 0)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate envoy-rls: %v\n", err)
		return exitFail
	}
	charging, closeCharging, err := envoyRLSCharging(s, set, log)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate envoy-rls: %v\n", err)
		return exitFail
	}
	defer closeCharging()
	svc, err := envoyrls.New(envoyrls.Config{
		Store: st, Headers: s.style, LimitHeader: s.limitH, RemainingHeader: s.remainingH, ResetHeader: s.resetH,
		Charging: charging, NearLimitRatio: s.nearRatio, Metrics: metrics,
		ShadowMode: s.shadow, QuotaMode: s.quota,
	})
	if err != nil {
		fmt.Fprintf(stderr, "tollgate envoy-rls: %v\n", err)
		return exitFail
	}
	svc.SetLimits(limits)
	metrics.Loaded(nil)

	w := envoyrls.NewWatcher(envoyrls.WatchConfig{Dir: s.dir, Interval: s.reload, Options: opts, OnLoad: func(l *envoyrls.Limits, err error) {
		metrics.Loaded(err)
		if err != nil {
			log.Error("configuration refused; the previous one still runs", "dir", s.dir, "error", err)
			return
		}
		svc.SetLimits(l)
		log.Info("configuration loaded", "dir", s.dir, "domains", l.Domains(), "files", len(l.Files))
	}}, srcs)
	w.Start()
	defer w.Close()

	gl, err := net.Listen("tcp", s.grpc)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate envoy-rls: -grpc: %v\n", err)
		return exitFail
	}
	// Stream workers: a stream is served by a goroutine kept from earlier
	// ones, whose stack has already grown, rather than a new one per call
	// (a stream beyond them still gets its own). The count covers the
	// calls waiting on Redis at once under load.
	g := grpc.NewServer(grpc.NumStreamWorkers(uint32(max(64, 8*runtime.GOMAXPROCS(0)))), envoyrls.ServerCodec())
	svc.Register(g)
	errc := make(chan error, 3)
	go func() { errc <- g.Serve(gl) }()
	log.Info("envoy-rls listening", "grpc", gl.Addr().String(), "dir", s.dir, "domains", limits.Domains(), "redis", s.redis != "")

	var servers []*http.Server
	for _, l := range []struct {
		flag, addr string
		h          http.Handler
	}{
		{"-http", s.http, svc.HTTPHandler()},
		{"-debug", s.debug, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})},
	} {
		if l.addr == "off" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			g.Stop()
			for _, hs := range servers {
				hs.Close()
			}
			fmt.Fprintf(stderr, "tollgate envoy-rls: %s: %v\n", l.flag, err)
			return exitFail
		}
		h := l.h
		if l.flag == "-debug" {
			// /metrics, and Go's profiles as envoyproxy/ratelimit's debug
			// port serves them (/debug/pprof/).
			mux := http.NewServeMux()
			mux.Handle("/metrics", l.h)
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
			h = mux
		}
		hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, hs)
		go func() { errc <- hs.Serve(ln) }()
		log.Info("envoy-rls listening", "flag", l.flag, "addr", ln.Addr().String())
	}

	code := exitOK
	select {
	case <-ctx.Done():
	case err := <-errc:
		log.Error("listener failed", "error", err)
		code = exitFail
	}
	svc.SetServing(false)
	stopped := make(chan struct{})
	go func() { g.GracefulStop(); close(stopped) }()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, hs := range servers {
		hs.Shutdown(sctx)
	}
	select {
	case <-stopped:
	case <-sctx.Done():
		g.Stop()
		code = exitFail
	}
	return code
}

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

// envoyRLSCharging is the service's Charging from s: on the strict
// tier, envoyproxy/ratelimit's counters in Redis itself (INCRBY and
// EXPIRE under its keys); elsewhere in the store. With
// TOLLGATE_REDIS_ON_ERROR=local a memory store decides while Redis
// fails; close releases it.
func envoyRLSCharging(s envoyRLSSettings, set *stores.Set, log *slog.Logger) (envoyrls.Charging, func(), error) {
	c := s.counting
	for _, n := range c.notes {
		log.Warn(n)
	}
	ch := envoyrls.Charging{
		CacheKeyPrefix: c.cacheKeyPrefix, StopIncrementWhenOverLimit: s.allOrNothing,
		LocalCacheBytes: c.localCache, ExpirationJitter: c.jitter, OnError: c.onError, Logger: log,
	}
	if r := set.Redis(); r != nil && s.tier != "eventual" {
		ch.Counters = r
	}
	closeFn := func() {}
	if c.onError == failmode.Local {
		mem, err := memory.New(memory.Config{})
		if err != nil {
			return ch, closeFn, err
		}
		ch.LocalStore, closeFn = mem, func() { mem.Close() }
	}
	return ch, closeFn, nil
}

// envoyRLSFlushDelay is how long the Redis client's writer may wait, when
// several calls are waiting, to send their commands in one write (the
// store's FlushDelay, 20µs by default; a lone caller never waits): every
// decision is a round trip, so fewer, larger writes cut the CPU per
// decision of tollgate and of Redis (bench/rlsload, 64 callers: 40 → 33µs
// and 7 → 5µs with one descriptor, 53 → 43µs and 12 → 10µs with three),
// for at most this much added latency. envoyproxy/ratelimit's
// REDIS_PIPELINE_WINDOW is the same idea, recommended at 150–500µs.
const envoyRLSFlushDelay = 150 * time.Microsecond

// ---- end of the counting's environment.
