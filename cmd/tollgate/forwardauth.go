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
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/forwardauth"
	"github.com/tollgate-dev/tollgate/rules"
	stores "github.com/tollgate-dev/tollgate/storeopen"
)

var forwardAuthCommand = &command{
	Name:  "forward-auth",
	Args:  "",
	Short: "answer nginx auth_request, Traefik ForwardAuth and Caddy forward_auth (examples/forwardauth)",
	Flags: func(fs *flag.FlagSet) func(context.Context, []string, io.Writer, io.Writer) int {
		file := fs.String("config", "", "configuration `file` (YAML): its rules, client_ip, headers, refusal and store (required)")
		listen := fs.String("listen", "127.0.0.1:9000", "listener `address`; /auth/nginx answers nginx, any other path Traefik and Caddy")
		logger := logFlags(fs)
		return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			if len(args) > 0 || *file == "" {
				fmt.Fprintf(stderr, "usage: tollgate forward-auth -config FILE [-listen ADDR]\n")
				return exitUsage
			}
			log, err := logger(stderr)
			if err != nil {
				fmt.Fprintf(stderr, "tollgate forward-auth: %v\n", err)
				return exitUsage
			}
			// Catch SIGHUP before loading anything: its default action
			// would end the process.
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			return forwardAuth(ctx, *file, *listen, hup, log, stderr)
		}
	},
}

// forwardAuth serves the forward-auth endpoint until ctx ends, reloading
// file on every value from hup (SIGHUP): the rules, client_ip, headers and
// refusal change for the requests that start after; a file that does not
// load, or that changes the store, keeps the running configuration.
func forwardAuth(ctx context.Context, file, listen string, hup <-chan os.Signal, log *slog.Logger, stderr io.Writer) int {
	cfg, err := config.Load(file)
	if err != nil {
		for _, p := range config.Problems(err) {
			fmt.Fprintln(stderr, p)
		}
		return exitFail
	}
	// The file's warnings are about routes, which forward-auth does not
	// use.
	if err := checkForwardAuth(cfg); err != nil {
		if ce := (*config.Error)(nil); errors.As(err, &ce) && ce.Pos.Line > 0 {
			fmt.Fprintf(stderr, "tollgate forward-auth: %v\n", err) // file:line:col: ...
		} else {
			fmt.Fprintf(stderr, "tollgate forward-auth: %s: %v\n", file, err)
		}
		return exitFail
	}
	set, err := stores.Open(cfg.Store, log)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate forward-auth: %s: %v\n", file, err)
		return exitFail
	}
	defer set.Close()
	h, err := newForwardAuth(cfg, set, log)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate forward-auth: %s: %v\n", file, err)
		return exitFail
	}
	var cur atomic.Pointer[forwardauth.Handler]
	cur.Store(h)
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate forward-auth: %v\n", err)
		return exitFail
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { cur.Load().ServeHTTP(w, r) }),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("forward-auth serving", "addr", ln.Addr().String(), "config", file, "rules", len(cfg.Rules),
		"unused", "routes, listen, admin, upstream and access_log are the gateway's")
	for done := false; !done; {
		select {
		case err := <-served:
			log.Error("listener failed", "err", err)
			return exitFail
		case <-hup:
			h, err := reloadForwardAuth(file, set, log)
			if err != nil {
				for _, line := range strings.Split(err.Error(), "\n") {
					log.Error("reload failed; the previous configuration keeps serving", "err", line)
				}
				continue
			}
			cur.Store(h)
			log.Info("config reloaded", "file", file)
		case <-ctx.Done():
			done = true
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Error("shutdown: requests still running were cut", "err", err)
		return exitFail
	}
	log.Info("stopped")
	return exitOK
}

// checkForwardAuth refuses what forward-auth cannot serve as configured.
func checkForwardAuth(cfg *config.Config) error {
	if len(cfg.ClientIP.TrustedProxies) == 0 {
		return errors.New("client_ip.trusted_proxies is empty: list the proxies that ask " +
			"(every auth request comes from one; nothing is trusted by default)")
	}
	if at, ok := cfg.Config.JA4Use(); ok {
		return &config.Error{Pos: cfg.Position(at), Msg: at + ": " + forwardauth.ErrJA4.Error()}
	}
	err := forwardauth.CheckRules(cfg.Rules)
	if re := (*forwardauth.RuleError)(nil); errors.As(err, &re) {
		at := fmt.Sprintf("rules[%d].%s", re.Index, re.Field)
		return &config.Error{Pos: cfg.Position(at), Msg: fmt.Sprintf("%s: rule %q: %v", at, re.Name, re.Err)}
	}
	return err
}

// newForwardAuth builds the handler over the stores of set (each rule's by
// its tier and failure mode, as the gateway's), trusting the file's
// client_ip.trusted_proxies for the forwarded fields too.
func newForwardAuth(cfg *config.Config, set *stores.Set, log *slog.Logger) (*forwardauth.Handler, error) {
	rc, err := cfg.EngineConfig() // with its members and except list files read
	if err != nil {
		return nil, err
	}
	rc.Logger = log
	rc.Stores = set.For(&rc)
	st, err := set.Engine(&rc)
	if err != nil {
		return nil, err
	}
	e, err := rules.New(rc, st)
	if err != nil {
		return nil, err
	}
	return forwardauth.New(e, forwardauth.Config{TrustedProxies: cfg.ClientIP.TrustedProxies, Logger: log})
}

// reloadForwardAuth loads file again and builds its handler over the
// running stores.
func reloadForwardAuth(file string, set *stores.Set, log *slog.Logger) (*forwardauth.Handler, error) {
	cfg, err := config.Load(file)
	if err != nil {
		return nil, err
	}
	if err := checkForwardAuth(cfg); err != nil {
		return nil, err
	}
	if !set.Same(cfg.Store) {
		return nil, errors.New("the store section changed: that needs a restart")
	}
	h, err := newForwardAuth(cfg, set, log)
	if err != nil {
		return nil, err
	}
	if err := set.Rotate(cfg.Store); err != nil {
		return nil, err
	}
	return h, nil
}
