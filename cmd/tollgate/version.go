package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

var versionCommand = &command{
	Name:  "version",
	Short: "print tollgate's version and the Go version it was built with",
	Flags: func(fs *flag.FlagSet) func(context.Context, []string, io.Writer, io.Writer) int {
		return func(_ context.Context, args []string, stdout, stderr io.Writer) int {
			if len(args) > 0 {
				fmt.Fprintf(stderr, "tollgate version: takes no arguments\n")
				return exitUsage
			}
			fmt.Fprintf(stdout, "tollgate %s %s %s/%s\n", version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return exitOK
		}
	},
}

// version is the module version, or the VCS revision of a development
// build, or "devel".
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return "devel-" + s.Value[:12]
		}
	}
	return "devel"
}
