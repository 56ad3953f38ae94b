// Command tollgate is the rate-limiting edge gateway and its tools.
//
//	tollgate serve [-config FILE]   run the gateway (no file: the embedded default)
//	tollgate check FILE             validate a configuration and summarize it
//	tollgate version                print the version
//
// Each subcommand is one file defining a *command and one entry in the
// commands list below. Exit codes: 0 success, 1 failure (an invalid
// configuration, a listener that cannot open, a shutdown that had to cut
// requests short), 2 a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// commands are tollgate's subcommands, in the order help lists them. To add
// one, define it in its own file and add it here.
var commands = []*command{
	serveCommand,
	checkCommand,
	replayCommand,
	forwardAuthCommand,
	envoyRLSCommand,
	versionCommand,
}

// command is one subcommand.
type command struct {
	// Name is the word after tollgate; Args describes the arguments after
	// the flags; Short is a one-line summary for the command list.
	Name, Args, Short string
	// Flags registers the subcommand's flags on fs and returns the
	// function that runs it once they are parsed; run returns the exit
	// code. stdout and stderr are where it writes. ctx ends on SIGINT or
	// SIGTERM unless the command handles signals itself.
	Flags func(fs *flag.FlagSet) (run func(ctx context.Context, args []string, stdout, stderr io.Writer) int)
}

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches args to a subcommand and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 {
			return run([]string{args[1], "-h"}, stdout, stderr)
		}
		usage(stdout)
		return exitOK
	case "-version", "--version":
		name = "version"
	}
	for _, c := range commands {
		if c.Name != name {
			continue
		}
		fs := flag.NewFlagSet("tollgate "+c.Name, flag.ContinueOnError)
		fs.SetOutput(stderr)
		runFn := c.Flags(fs)
		fs.Usage = func() {
			w := fs.Output()
			fmt.Fprintf(w, "usage: tollgate %s [flags] %s\n\n%s\n", c.Name, c.Args, c.Short)
			if hasFlags(fs) {
				fmt.Fprintf(w, "\nflags:\n")
				fs.PrintDefaults()
			}
		}
		if err := fs.Parse(args[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return exitOK
			}
			return exitUsage
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return runFn(ctx, fs.Args(), stdout, stderr)
	}
	fmt.Fprintf(stderr, "tollgate: unknown command %q\n\n", name)
	usage(stderr)
	return exitUsage
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "tollgate is a rate limiter for the edge of HTTP APIs.\n\nusage: tollgate <command> [flags] [arguments]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-12s %s\n", c.Name, c.Short)
	}
	fmt.Fprintf(w, "\nRun 'tollgate <command> -h' for a command's flags.\n")
}
