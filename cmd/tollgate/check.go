package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/envoyrls"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

var checkCommand = &command{
	Name:  "check",
	Args:  "FILE | -envoy-rls DIR",
	Short: "validate a configuration file, or an envoyproxy/ratelimit configuration directory, and print what it will do (exit 0 valid, 1 invalid; warnings, such as no routes, on stderr)",
	Flags: func(fs *flag.FlagSet) func(context.Context, []string, io.Writer, io.Writer) int {
		quiet := fs.Bool("q", false, "print nothing when the file is valid")
		envoyRLS := fs.Bool("envoy-rls", false, "the argument is a directory of envoyproxy/ratelimit configuration files, checked as tollgate envoy-rls loads them (a directory is taken as one without it)")
		merge := fs.Bool("merge-domains", os.Getenv("MERGE_DOMAIN_CONFIG") == "true", "with -envoy-rls: several files may hold one domain (default MERGE_DOMAIN_CONFIG)")
		return func(_ context.Context, args []string, stdout, stderr io.Writer) int {
			if len(args) != 1 {
				fmt.Fprintf(stderr, "usage: tollgate check [-q] FILE | tollgate check [-q] -envoy-rls [-merge-domains] DIR\n")
				return exitUsage
			}
			if fi, err := os.Stat(args[0]); *envoyRLS || (err == nil && fi.IsDir()) {
				return checkEnvoyRLS(args[0], *merge, *quiet, stdout, stderr)
			}
			cfg, err := config.Load(args[0])
			if err != nil {
				ps := config.Problems(err)
				for _, p := range ps {
					fmt.Fprintln(stderr, p)
				}
				fmt.Fprintf(stderr, "%s: %d problem(s)\n", args[0], len(ps))
				return exitFail
			}
			// Compile the rules as serve will, so that anything the
			// validation did not catch shows here rather than at start.
			st, err := memory.New(memory.Config{MaxKeys: 1, SweepInterval: -1})
			if err == nil {
				defer st.Close()
				var rc rules.Config
				if rc, err = cfg.EngineConfig(); err == nil {
					rc.Scales = cfg.BaseScales()
					rc.Slots = memory.NewSlots()
					_, err = rules.New(rc, st)
				}
			}
			if err != nil {
				fmt.Fprintf(stderr, "%s: %v\n", args[0], err)
				return exitFail
			}
			// Warnings go to stderr, -q or not: a valid file that
			// proxies nowhere useful is worth a line.
			for _, w := range cfg.Warnings() {
				fmt.Fprintln(stderr, w)
			}
			if !*quiet {
				cfg.Describe(stdout)
			}
			return exitOK
		}
	},
}

// checkEnvoyRLS checks an envoyproxy/ratelimit configuration directory as
// tollgate envoy-rls loads it, refusing what envoyproxy/ratelimit's
// config_check_cmd refuses, every problem at file:line.
func checkEnvoyRLS(dir string, merge, quiet bool, stdout, stderr io.Writer) int {
	l, err := envoyrls.LoadDirWith(dir, envoyrls.Options{MergeDomains: merge})
	if err != nil {
		ps := envoyrls.Problems(err)
		if len(ps) == 0 {
			fmt.Fprintf(stderr, "%s: %v\n", dir, err)
			return exitFail
		}
		for _, p := range ps {
			fmt.Fprintln(stderr, p)
		}
		fmt.Fprintf(stderr, "%s: %d problem(s)\n", dir, len(ps))
		return exitFail
	}
	if !quiet {
		fmt.Fprintf(stdout, "%s: %d domain(s) in %d file(s): all rate limit configs ok\n", dir, l.Domains(), len(l.Files))
	}
	return exitOK
}
