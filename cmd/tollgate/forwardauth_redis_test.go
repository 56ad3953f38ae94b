package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/redistest"
)

// forward-auth's reload rotates the Redis password from password_file as
// serve's does: a password Redis refuses fails the reload (the old
// connection keeps deciding), an accepted one is connected with, and the
// log shows neither.
func TestForwardAuthRotatesRedisPassword(t *testing.T) {
	const oldPW, newPW, wrongPW = "fa-old-5e21", "fa-new-0d93", "fa-wrong-77c4"
	rs := redistest.Start(t)
	rs.CLI(t, "ACL", "SETUSER", "fa", "on", ">"+oldPW, "~*", "+@all")
	pw := filepath.Join(t.TempDir(), "redis.pw")
	os.WriteFile(pw, []byte(oldPW+"\n"), 0o600)
	file := writeConfig(t, `client_ip: {trusted_proxies: [127.0.0.1]}
store: {redis: {url: "redis://fa@`+rs.Addr+`", password_file: "`+pw+`", timeout: 2s}}
rules: [{name: api, match: {path_prefixes: [/api/]}, policies: [{rate: 1000/h, burst: 1000}]}]
`)
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hup := make(chan os.Signal)
	var logs syncLog
	done := make(chan int, 1)
	go func() {
		done <- forwardAuth(ctx, file, addr, hup, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), io.Discard)
	}()
	eventually(t, "forward-auth listening", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	onRedis := func(what string) {
		t.Helper()
		rs.CLI(t, "FLUSHALL")
		resp, _ := get(t, "http://"+addr+"/auth", "X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/api/x", "X-Forwarded-For", "203.0.113.9")
		if resp.StatusCode != 200 || rs.CLI(t, "DBSIZE") == "0" {
			t.Fatalf("%s: %d, not decided on Redis", what, resp.StatusCode)
		}
	}
	reload := func(password string) {
		os.WriteFile(pw, []byte(password+"\n"), 0o600)
		hup <- syscall.SIGHUP // unbuffered: taken by the serving loop
		hup <- syscall.SIGHUP // ... and the first one handled
	}
	onRedis("with the first password")
	reload(wrongPW)
	if !strings.Contains(logs.String(), "WRONGPASS") {
		t.Fatalf("the refused password's reload is not logged:\n%s", logs.String())
	}
	onRedis("after a refused password")
	rs.CLI(t, "ACL", "SETUSER", "fa", ">"+newPW)
	reload(newPW)
	if !strings.Contains(logs.String(), "reconnected with new credentials") {
		t.Fatalf("the new password was not connected with:\n%s", logs.String())
	}
	rs.CLI(t, "ACL", "SETUSER", "fa", "<"+oldPW)
	onRedis("after the rotation")
	for _, s := range []string{oldPW, newPW, wrongPW} {
		if strings.Contains(logs.String(), s) {
			t.Fatalf("the log shows a password:\n%s", logs.String())
		}
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("exit %d, want %d", code, exitOK)
	}
}
