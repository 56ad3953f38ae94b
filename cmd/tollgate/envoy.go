package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
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
