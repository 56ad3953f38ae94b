package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/gateway"
)

var serveCommand = &command{
	Name:  "serve",
	Args:  "",
	Short: "run the edge gateway (with no -config: the embedded default, a demo origin on :8080)",
	Flags: func(fs *flag.FlagSet) func(context.Context, []string, io.Writer, io.Writer) int {
		file := fs.String("config", "", "configuration `file` (YAML); empty runs the embedded default")
		logger := logFlags(fs)
		listen := fs.String("listen", "", "traffic listener `address`, overriding the file's listen.addr")
		admin := fs.String("admin", "", "admin listener `address` (or off), overriding the file's admin.addr")
		return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			if len(args) == 1 && *file == "" {
				*file = args[0] // tollgate serve FILE
			} else if len(args) > 0 {
				fmt.Fprintf(stderr, "usage: tollgate serve [-config FILE]\n")
				return exitUsage
			}
			log, err := logger(stderr)
			if err != nil {
				fmt.Fprintf(stderr, "tollgate serve: %v\n", err)
				return exitUsage
			}
			adjust := func(c *config.Config) {
				if *listen != "" {
					c.Listen.Addr = *listen
				}
				if *admin != "" {
					c.Admin.Addr = *admin
				}
			}
			return serve(ctx, *file, adjust, log, stdout, stderr)
		}
	},
}

// logFlags declares -log-format and -log-level on fs, and returns what
// builds the logger they ask for, writing to w.
func logFlags(fs *flag.FlagSet) func(w io.Writer) (*slog.Logger, error) {
	format := fs.String("log-format", "text", "log format: text or json")
	level := fs.String("log-level", "info", "log level: debug, info, warn or error")
	return func(w io.Writer) (*slog.Logger, error) { return newLogger(w, *format, *level) }
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("-log-format %q: want text or json", format)
}

func serve(ctx context.Context, file string, adjust func(*config.Config), log *slog.Logger, stdout, stderr io.Writer) int {
	// Catch SIGHUP before anything can send it (its default action
	// would end the process), loading a large file included.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	cfg := config.Default()
	if file != "" {
		var err error
		if cfg, err = config.Load(file); err != nil {
			for _, p := range config.Problems(err) {
				fmt.Fprintln(stderr, p)
			}
			return exitFail
		}
	}
	for _, w := range cfg.Warnings() {
		log.Warn(strings.TrimPrefix(w.Msg, "warning: "), "config", w.Pos.String())
	}
	adjust(cfg)
	g, err := gateway.New(cfg, gateway.Options{Logger: log, Adjust: adjust})
	if err != nil {
		fmt.Fprintf(stderr, "tollgate serve: %v\n", err)
		return exitFail
	}
	if err := g.Start(); err != nil {
		g.Close()
		fmt.Fprintf(stderr, "tollgate serve: %v\n", err)
		return exitFail
	}
	log.Info("serving", "traffic", g.Addr().String(), "admin", addrString(g.AdminAddr()),
		"config", orDefault(file), "rules", len(cfg.Rules))
	if file == "" {
		printTryIt(stdout, g)
	}
	for {
		select {
		case <-hup:
			if file == "" {
				log.Info("SIGHUP: no configuration file to reload (running the embedded default)")
				continue
			}
			log.Info("SIGHUP: reloading", "file", file)
			g.ReloadFile(file)
		case err := <-g.Err():
			log.Error("listener failed", "err", err)
			g.Close()
			return exitFail
		case <-ctx.Done():
			log.Info("shutting down: finishing in-flight requests", "timeout", g.Config().ShutdownTimeout)
			sctx, cancel := context.WithTimeout(context.Background(), g.Config().ShutdownTimeout)
			defer cancel()
			// A second signal during the wait stops at once.
			again := make(chan os.Signal, 1)
			signal.Notify(again, os.Interrupt, syscall.SIGTERM)
			go func() {
				select {
				case <-again:
					cancel()
				case <-sctx.Done():
				}
			}()
			if err := g.Shutdown(sctx); err != nil {
				// A request cut short is a failure its client sees:
				// say how many, and exit non-zero.
				var cut *gateway.CutError
				if errors.As(err, &cut) {
					log.Error("shutdown: requests still running were cut", "requests", cut.Requests, "err", cut.Err)
				} else {
					log.Error("shutdown failed", "err", err)
				}
				return exitFail
			}
			log.Info("stopped")
			return exitOK
		}
	}
}

func orDefault(file string) string {
	if file == "" {
		return "(embedded default)"
	}
	return file
}

func addrString(a net.Addr) string {
	if a == nil {
		return "off"
	}
	return a.String()
}

// printTryIt tells a newcomer how to see the limiter work.
func printTryIt(w io.Writer, g *gateway.Gateway) {
	_, port, _ := net.SplitHostPort(g.Addr().String())
	url := "localhost:" + port + "/"
	fmt.Fprintf(w, `
tollgate is running its embedded default: a demo origin behind a limit of
5 requests/s per client IP (burst 10).

  See the rate-limit headers:   curl -i %[1]s
  Watch it refuse (429):        for i in $(seq 30); do curl -s -o /dev/null -w '%%{http_code} ' %[1]s; done; echo
  Metrics:                      curl -s %[2]s/metrics | grep tollgate_
  The running config:           curl -s %[2]s/config

Write your own configuration (see examples/) and run: tollgate serve -config FILE
Ctrl-C stops it.

`, url, "http://"+addrString(g.AdminAddr()))
}
