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
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/store/redis"
	"github.com/tollgate-dev/tollgate/stores"
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
		headers := fs.String("headers", env.headers, "response headers: draft10, legacy (RateLimit-Limit/-Remaining/-Reset, named by LIMIT_LIMIT_HEADER, LIMIT_REMAINING_HEADER, LIMIT_RESET_HEADER) or none (default legacy when LIMIT_RESPONSE_HEADERS_ENABLED=true)")
		fs.BoolVar(&env.allOrNothing, "all-or-nothing", env.allOrNothing, "when a descriptor of a request would go over its limit, increment only those going over, as envoyproxy/ratelimit does (default STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT; NEAR_LIMIT_RATIO and GLOBAL_SHADOW_MODE are read too)")
		reload := fs.Duration("reload", time.Second, "how often the configuration directory is read for changes")
		logger := logFlags(fs)
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
	redisMaster                   string         // REDIS_TYPE=sentinel: the master set's name
	redisTLS                      bool           // REDIS_TLS
	redisTLSFiles                 redis.TLSFiles // REDIS_TLS_CACERT, _CLIENT_CERT, _CLIENT_KEY, _SKIP_HOSTNAME_VERIFICATION
	counting                      rlsCounting    // envoyRLSCountingEnv
	redisTimeout                  time.Duration  // -redis-timeout
	headers                       string
	limitH, remainingH, resetH    string
	allOrNothing, globalShadow    bool
	nearRatio                     float64
	tier                          string
	style                         envoyrls.HeaderStyle
	reload                        time.Duration
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
	s := envoyRLSSettings{dir: ".", grpc: ":8081", http: ":8080", debug: ":6070", headers: "draft10"}
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
	boolVar := func(name string) bool {
		v := getenv(name)
		if v == "" {
			return false
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: not a boolean", name, v))
		}
		return b
	}
	s.redisTLS = boolVar("REDIS_TLS")
	s.redisTLSFiles = redis.TLSFiles{
		CAFile: getenv("REDIS_TLS_CACERT"), CertFile: getenv("REDIS_TLS_CLIENT_CERT"), KeyFile: getenv("REDIS_TLS_CLIENT_KEY"),
		SkipHostnameVerification: boolVar("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION"),
	}
	if !s.redisTLS && s.redisTLSFiles != (redis.TLSFiles{}) {
		errs = append(errs, errors.New("REDIS_TLS_* is set but REDIS_TLS is not true"))
	}
	if boolVar("LIMIT_RESPONSE_HEADERS_ENABLED") {
		s.headers = "legacy"
	}
	s.limitH, s.remainingH, s.resetH = getenv("LIMIT_LIMIT_HEADER"), getenv("LIMIT_REMAINING_HEADER"), getenv("LIMIT_RESET_HEADER")
	s.globalShadow = boolVar("GLOBAL_SHADOW_MODE")
	s.allOrNothing = boolVar("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT")
	if v := getenv("NEAR_LIMIT_RATIO"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r <= 0 || r > 1 {
			errs = append(errs, fmt.Errorf("NEAR_LIMIT_RATIO=%q: want a number in (0, 1]", v))
		}
		s.nearRatio = r
	}
	return s, errors.Join(errs...)
}

// openEnvoyRLSStore opens the store s names through package stores, as
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
	cfg := rules.Config{OnError: s.counting.onError} // the tollgate_algorithm limits' failure mode; unset: local
	st, err := set.Engine(&cfg)
	if err == nil && s.redis != "" {
		tier := rules.ConsistencyStrict
		if s.tier == "eventual" {
			tier = rules.ConsistencyEventual
		}
		st, err = set.For(&cfg)(rules.Rule{Consistency: tier})
	}
	if err != nil {
		set.Close()
		return nil, nil, err
	}
	return st, set, nil
}

func runEnvoyRLS(ctx context.Context, s envoyRLSSettings, log *slog.Logger, stderr io.Writer) int {
	srcs, err := envoyrls.ReadDir(s.dir)
	var limits *envoyrls.Limits
	if err == nil {
		limits, err = envoyrls.Build(srcs)
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
		Charging: charging, GlobalShadowMode: s.globalShadow, NearLimitRatio: s.nearRatio, Metrics: metrics,
	})
	if err != nil {
		fmt.Fprintf(stderr, "tollgate envoy-rls: %v\n", err)
		return exitFail
	}
	svc.SetLimits(limits)
	metrics.Loaded(nil)

	w := envoyrls.NewWatcher(envoyrls.WatchConfig{Dir: s.dir, Interval: s.reload, OnLoad: func(l *envoyrls.Limits, err error) {
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
	onError        string        // TOLLGATE_REDIS_ON_ERROR: "" (an error, as upstream), open, closed, local
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
	switch c.onError = getenv("TOLLGATE_REDIS_ON_ERROR"); c.onError {
	case envoyrls.OnErrorFail, envoyrls.OnErrorOpen, envoyrls.OnErrorClosed, envoyrls.OnErrorLocal:
	default:
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
	if c.onError == envoyrls.OnErrorLocal {
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
