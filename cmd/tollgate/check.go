package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

var checkCommand = &command{
	Name:  "check",
	Args:  "FILE",
	Short: "validate a configuration file and print what it will do (exit 0 valid, 1 invalid; warnings, such as no routes, on stderr)",
	Flags: func(fs *flag.FlagSet) func(context.Context, []string, io.Writer, io.Writer) int {
		quiet := fs.Bool("q", false, "print nothing when the file is valid")
		return func(_ context.Context, args []string, stdout, stderr io.Writer) int {
			if len(args) != 1 {
				fmt.Fprintf(stderr, "usage: tollgate check [-q] FILE\n")
				return exitUsage
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
