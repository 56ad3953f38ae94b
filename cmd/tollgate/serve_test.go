package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/config"
)

// serve with a file that has no routes logs a warning that every request
// goes to the built-in demo origin (and still serves).
func TestServeWarnsWithoutRoutes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "no-routes.yaml")
	src := "listen: {addr: \"127.0.0.1:0\"}\nadmin: {addr: \"off\"}\nreload: {watch: false}\nrules: [{name: r, policies: [{rate: 10/s}]}]\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs, stdout, stderr bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // serve starts, then shuts down at once
	code := serve(ctx, file, func(*config.Config) {}, slog.New(slog.NewTextHandler(&logs, nil)), &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d\nlogs: %s\nstderr: %s", code, &logs, &stderr)
	}
	if !strings.Contains(logs.String(), `level=WARN msg="no routes: every request goes to the built-in demo origin`) ||
		!strings.Contains(logs.String(), "config="+file) {
		t.Errorf("no warning logged:\n%s", &logs)
	}
}
