package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/gateway/adapt"
	"github.com/tollgate-dev/tollgate/gateway/conns"
	"github.com/tollgate-dev/tollgate/gateway/dashfeed"
	"github.com/tollgate-dev/tollgate/gateway/exchange"
	"github.com/tollgate-dev/tollgate/gateway/fastpath"
	"github.com/tollgate-dev/tollgate/gateway/h2path"
	"github.com/tollgate-dev/tollgate/gateway/observe"
	"github.com/tollgate-dev/tollgate/ja4"
	"github.com/tollgate-dev/tollgate/limit"
	stores "github.com/tollgate-dev/tollgate/storeopen"
)

// Gateway is a running edge gateway. Create it with New, start it with
// Start, change its configuration with Reload or ReloadFile, and stop it
// with Shutdown (graceful) or Close.
type Gateway struct {
	// core is what the data paths share with the lifecycle: the
	// snapshot, metrics, logs, in-flight count, tracked connections.
	core   *exchange.Core
	fast   *fastpath.Server // the fasthttp HTTP/1.1 data path
	h2     *h2path.Server   // the net/http HTTP/2 and gRPC data path
	adjust func(*config.Config)

	// mu serializes reloads and guards clients and holds.
	mu      sync.Mutex
	clients map[string]*fasthttp.HostClient
	holds   map[string]*conns.ClientHolds // by upstream host:port (build.go)

	stores *stores.Set        // the store section's store and the tiers' over it
	adapt  *adapt.Controllers // the adaptive controllers (adaptive.go)
	concs  *adapt.ConcLimits  // the routes' adaptive concurrency (adaptive.go)
	slots  limit.Slots        // concurrency slots, kept across reloads (slots.go)

	server   *fasthttp.Server
	ln       net.Listener
	h2ln     *h2path.Listener // the net/http listener, with listen.http2 on
	admin    *http.Server
	adminLn  net.Listener
	dash     *dashfeed.Feed // the dashboard's feed and the refusal log
	ready    atomic.Bool
	serveErr chan error
	serving  sync.WaitGroup // the listeners' Serve goroutines

	// stop ends the watcher; done reports it has.
	stop, done chan struct{}
	watching   bool // the watcher was started
	shutDown   bool // the traffic server was shut down
	closeOnce  sync.Once
}

// Options are a gateway's settings that do not come from the file.
type Options struct {
	// Logger receives the gateway's logs. Nil means slog.Default().
	Logger *slog.Logger
	// Adjust, when set, is applied to every configuration loaded by
	// ReloadFile before it is used, as it was to the first one (command
	// line overrides of the listener addresses, for example).
	Adjust func(*config.Config)
}

// New builds a gateway from cfg (as returned by config.Load, so valid and
// with defaults) without opening any socket.
func New(cfg *config.Config, opts Options) (*Gateway, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	core := &exchange.Core{Log: log}
	g := &Gateway{
		core:     core,
		fast:     fastpath.New(core),
		h2:       h2path.New(core),
		adjust:   opts.Adjust,
		clients:  map[string]*fasthttp.HostClient{},
		serveErr: make(chan error, 2),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	var err error
	if g.stores, err = stores.Open(cfg.Store, g.core.Log); err != nil {
		return nil, err
	}
	g.core.M = observe.NewMetrics()
	if ms := g.stores.Memory(); ms != nil {
		g.core.M.Reg.MustRegister(observe.MemoryCollector{S: ms})
	}
	if rs := g.stores.Redis(); rs != nil {
		g.core.M.Reg.MustRegister(observe.RedisCollector{S: rs})
	}
	g.initAdaptive()
	g.concs = adapt.NewConcLimits(g.core.M.Reg)
	g.openSlots(cfg)
	if gs := g.stores.Gossip(); gs != nil {
		g.core.M.Reg.MustRegister(observe.GossipCollector{S: gs, Cold: g.stores.ColdDecisions})
	}
	if g.dash, err = dashfeed.New(&dashfeed.Sources{Core: g.core, Stores: g.stores, Adapt: g.adapt, Concs: g.concs}, cfg); err != nil {
		g.closeSlots()
		g.stores.Close()
		return nil, err
	}
	s, err := g.build(cfg)
	if err != nil {
		g.dash.Close()
		g.closeSlots()
		g.stores.Close()
		return nil, err
	}
	g.core.Snap.Store(s)
	g.adapt.Commit(s.Loops)
	if cfg.AccessLog.Path != "" {
		if g.core.Access, err = observe.OpenAccessLog(cfg.Resolve(cfg.AccessLog.Path), cfg.AccessLog.Format); err != nil {
			g.dash.Close()
			g.adapt.CloseAll()
			g.closeSlots()
			g.stores.Close()
			return nil, err
		}
	}
	return g, nil
}

// Start opens the traffic and admin listeners and serves in the
// background. It returns once both listen, or with the error that
// prevented it.
func (g *Gateway) Start() error {
	s := g.core.Snap.Load()
	cfg := s.Cfg
	ln, err := net.Listen("tcp", cfg.Listen.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	ln = conns.YieldListener{Listener: ln, Send: cfg.Listen.SendTimeout}
	if cfg.Listen.HTTP2 == config.HTTP2On {
		g.h2ln = g.h2.NewListener(cfg)
		ln = g.h2ln.Wrap(ln)
	}
	if cfg.Listen.TLS != nil {
		ln = tls.NewListener(ln, &tls.Config{
			MinVersion: tls.VersionTLS12,
			NextProtos: h2path.ALPNProtos(cfg.Listen),
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
				return g.core.Snap.Load().Cert, nil
			},
			// Every connection's JA4, whether or not a rule uses it
			// now: a reload may add one, and it costs under a
			// microsecond per handshake (ja4's BenchmarkAppend).
			GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
				ja4.CaptureHello(h)
				return nil, nil
			},
		})
	}
	g.core.Warns = observe.NewWarnLog(g.core.Log, time.Minute, 10, nil)
	server := &fasthttp.Server{
		Handler:      g.fast.Serve,
		Name:         "tollgate",
		ReadTimeout:  cfg.Listen.ReadTimeout,
		WriteTimeout: cfg.Listen.WriteTimeout,
		IdleTimeout:  cfg.Listen.IdleTimeout,
		Concurrency:  cfg.Listen.MaxConns,
		// A request head (request line and header fields) up to 8 KiB:
		// nginx's large_client_header_buffers line size, twice fasthttp's
		// default, so that large cookies pass. Larger heads get 431.
		ReadBufferSize:        exchange.MaxRequestHead,
		StreamRequestBody:     true,
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true,
		// Nothing reads ctx.Time(): skip fasthttp's clock read before
		// every request (the gateway reads the monotonic clock itself).
		LazyRequestTime: true,
		CloseOnShutdown: true,
		ErrorHandler:    fastpath.ReadError,
		ExpectHandler:   g.fast.ExpectContinue,
		ConnState:       g.fast.ConnState,
		// fasthttp's messages quote what clients sent: they go through
		// a redacting, rate-limited logger, without the request dumps.
		Logger:                g.core.Warns,
		SecureErrorLogMessage: true,

		// Bodies pass through untouched: no form parsing (fasthttp would
		// read a multipart body whole, before the size check, and write
		// it anew without its preamble, epilogue and part fields).
		DisablePreParseMultipartForm: true,
	}
	if cfg.Admin.Addr != "off" {
		if g.adminLn, err = net.Listen("tcp", cfg.Admin.Addr); err != nil {
			ln.Close()
			return fmt.Errorf("admin listen: %w", err)
		}
		g.admin = &http.Server{Handler: g.adminHandler(), ReadHeaderTimeout: 10 * time.Second}
		g.dash.Start()
		// The admin listener's writes are bounded as the traffic
		// listener's are (listen.send_timeout): a dashboard that stops
		// reading its event stream is cut.
		adminLn := conns.YieldListener{Listener: g.adminLn, Send: cfg.Listen.SendTimeout}
		g.serving.Go(func() {
			if err := g.admin.Serve(adminLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				g.report(fmt.Errorf("admin: %w", err))
			}
		})
	}
	g.ln, g.server = ln, server
	if hl := g.h2ln; hl != nil {
		g.server = nil // the net/http path serves this listener
		g.serving.Go(func() {
			if err := hl.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				g.report(fmt.Errorf("serve: %w", err))
			}
		})
	} else {
		g.serving.Go(func() {
			if err := server.Serve(ln); err != nil {
				g.report(fmt.Errorf("serve: %w", err))
			}
		})
	}
	g.watching = true
	go g.watch(newWatcher(cfg))
	go g.watchGeoIP(observe.NewGeoIPMetrics(g.core.M.Reg))
	g.ready.Store(true)
	return nil
}

// Addr is the traffic listener's address, once started.
func (g *Gateway) Addr() net.Addr { return g.ln.Addr() }

// AdminAddr is the admin listener's address, or nil when it is off.
func (g *Gateway) AdminAddr() net.Addr {
	if g.adminLn == nil {
		return nil
	}
	return g.adminLn.Addr()
}

// Err reports a listener that stopped serving on its own.
func (g *Gateway) Err() <-chan error { return g.serveErr }

// report passes a listener's failure to Err without ever blocking.
func (g *Gateway) report(err error) {
	select {
	case g.serveErr <- err:
	default:
	}
}

// Config returns the running configuration.
func (g *Gateway) Config() *config.Config { return g.core.Snap.Load().Cfg }

// Reload validates-by-building cfg and, if it builds, swaps it in
// atomically. The store is kept, so rules that did not change keep their
// counters; new Redis credentials or TLS files reconnect it (see
// stores.Set.Rotate), and a reload whose new connection fails is refused.
// Changes that need a restart (listener addresses, where the store is)
// are refused: the old configuration keeps serving.
func (g *Gateway) Reload(cfg *config.Config) error {
	err := g.reload(cfg)
	g.countReload(err)
	return err
}

func (g *Gateway) reload(cfg *config.Config) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.core.Snap.Load().Cfg
	var restart []string
	if listenShape(cfg.Listen) != listenShape(old.Listen) {
		restart = append(restart, "listen (other than the TLS files)")
	}
	if cfg.Admin.Addr != old.Admin.Addr {
		restart = append(restart, "admin.addr")
	}
	if !g.stores.Same(cfg.Store) {
		restart = append(restart, "store")
	}
	if cfg.AccessLog.Path != old.AccessLog.Path || cfg.AccessLog.Format != old.AccessLog.Format {
		restart = append(restart, "access_log")
	}
	if cfg.ConcurrencyLease != old.ConcurrencyLease {
		restart = append(restart, "concurrency_lease")
	}
	if cfg.RefusalLog != old.RefusalLog {
		restart = append(restart, "refusal_log")
	}
	if len(restart) > 0 {
		return fmt.Errorf("reload refused: changes to %v need a restart", restart)
	}
	s, err := g.build(cfg)
	if err != nil {
		return err
	}
	// New Redis credentials or TLS files: connect with them before the
	// new configuration serves (the old connection serves meanwhile, and
	// keeps serving when they fail).
	if err := g.stores.Rotate(cfg.Store); err != nil {
		return err
	}
	g.core.Snap.Store(s)
	g.adapt.Commit(s.Loops)
	return nil
}

// listenShape is what of a listener cannot change while it serves: all but
// the certificate files (reloaded with the configuration) and
// MaxRequestBody (read per request).
func listenShape(l config.Listen) any {
	type shape struct {
		Addr                                   string
		TLS                                    bool
		ReadTimeout, WriteTimeout, IdleTimeout time.Duration
		SendTimeout                            time.Duration
		MaxConns                               int
		HTTP2                                  string
		MaxConcurrentStreams                   int
		MaxHeaderListSize                      int
	}
	return shape{l.Addr, l.TLS != nil, l.ReadTimeout, l.WriteTimeout, l.IdleTimeout, l.SendTimeout, l.MaxConns,
		l.HTTP2, l.MaxConcurrentStreams, l.MaxHeaderListSize}
}

// ReloadFile loads path and reloads it. A file that does not load is
// logged and counted, and the old configuration keeps serving.
func (g *Gateway) ReloadFile(path string) error {
	return g.reloadLoaded(config.Load(path))
}

// reloadLoaded reloads cfg, loaded (or not: err) from a file.
func (g *Gateway) reloadLoaded(cfg *config.Config, err error) error {
	if err != nil {
		g.countReload(err)
		return err
	}
	if g.adjust != nil {
		g.adjust(cfg)
	}
	return g.Reload(cfg)
}

func (g *Gateway) countReload(err error) {
	if err != nil {
		g.core.M.Reloads.WithLabelValues("failure").Inc()
		g.core.M.ReloadOK.Set(0)
		g.core.Log.Error("config reload failed; the previous configuration keeps serving", "err", err)
		return
	}
	g.core.M.Reloads.WithLabelValues("success").Inc()
	g.core.M.ReloadOK.Set(1)
	cfg := g.core.Snap.Load().Cfg
	g.core.Log.Info("config reloaded", "rules", len(cfg.Rules))
	for _, w := range cfg.Warnings() {
		g.core.Log.Warn(w.Error())
	}
}

// Shutdown stops accepting connections, waits for in-flight requests until
// ctx ends, then releases everything. When ctx ends with requests still
// being served it returns a *CutError saying how many (wrapping ctx's
// error); other errors are the listener's.
func (g *Gateway) Shutdown(ctx context.Context) error {
	g.ready.Store(false)
	var err error
	if g.server != nil {
		err = g.server.ShutdownWithContext(ctx)
		g.shutDown = true
		if err != nil && ctx.Err() != nil {
			// fasthttp waits for every open connection; those not in
			// an exchange were idle, not cut.
			err = nil
			if n := g.core.InFlight.Load(); n > 0 {
				err = &CutError{Requests: n, Err: ctx.Err()}
			}
		}
	}
	if hl := g.h2ln; hl != nil {
		if err = hl.Shutdown(ctx, g.core.InFlight.Load); err != nil && ctx.Err() != nil {
			err = &CutError{Requests: g.core.InFlight.Load(), Err: ctx.Err()}
		}
	}
	if g.admin != nil {
		g.dash.Hub.Close() // event streams never go idle: end them first
		actx, cancel := context.WithTimeout(context.Background(), time.Second)
		g.admin.Shutdown(actx)
		cancel()
	}
	g.Close()
	return err
}

// Close stops everything at once: listeners, tunnels, the watcher, the
// store and the access log.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		g.ready.Store(false)
		close(g.stop)
		if g.watching {
			<-g.done
		}
		if g.server != nil && !g.shutDown {
			g.server.Shutdown()
		}
		if g.ln != nil {
			// fasthttp's Shutdown closes only the listeners its Serve
			// has registered: one called before Serve got that far
			// returns at once, and Serve then runs for ever. Closing
			// the listener ends Serve either way.
			g.ln.Close()
		}
		g.dash.Close()
		if g.admin != nil {
			g.admin.Close()
		}
		if g.h2ln != nil {
			g.h2ln.Close()
		}
		g.serving.Wait()
		g.adapt.CloseAll()
		g.h2.CloseTransports()
		g.core.Tunnels.CloseAll()
		g.mu.Lock()
		for _, c := range g.clients {
			c.CloseIdleConnections()
		}
		g.mu.Unlock()
		if g.core.Access != nil {
			g.core.Access.Close()
		}
		if g.core.Warns != nil {
			g.core.Warns.Close()
		}
		g.closeSlots()
		g.stores.Close()
	})
	return nil
}
