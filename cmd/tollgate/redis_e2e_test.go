package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
)

// redisCfg is a gateway configuration on a Redis store section (indented
// under store.redis; a timeout a loaded machine meets), watching its files every 20ms, with one rule whose
// keys live long enough to be seen on the server.
func redisCfg(origin, redis string) string {
	return `listen: {addr: "127.0.0.1:0"}
admin: {addr: "127.0.0.1:0"}
reload: {watch: true, interval: 20ms, settle: 10ms}
routes: [{path: /, upstream: "` + origin + `"}]
on_error: closed
rules: [{name: per-ip, policies: [{rate: 1000/h, burst: 1000}]}]
store:
  redis:
    timeout: 2s
` + redis
}

// runServeToExit runs tollgate serve on file, expecting it to exit
// (it cannot start), and returns its exit code and output.
func runServeToExit(t *testing.T, file string, env []string, flags ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tollgateBinary(t), append([]string{"serve", "-config", file}, flags...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("tollgate serve did not exit:\n%s", out)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	return code, string(out)
}

// keysOn returns how many tollgate keys srv holds.
func keysOn(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	out := strings.TrimSpace(srv.CLI(t, "--scan", "--pattern", "tollgate:*"))
	if out == "" {
		return 0
	}
	return len(strings.Split(out, "\n"))
}

// TestE2ERedisSecretsNeverShown runs the gateway against an ACL user
// whose password comes from an environment variable, then from a file;
// rotates the file's password with a reload; and tries wrong passwords at
// start and at reload. Every output (tollgate check, /config, the log at
// debug level, the errors) is searched for every password: none is found.
// (Not parallel: tollgate check runs in this process, with t.Setenv.)
func TestE2ERedisSecretsNeverShown(t *testing.T) {
	const (
		envSecret   = "env-s3cret-9f2a71c4"
		fileSecret  = "file-s3cret-5be0d3aa"
		rotated     = "rotated-s3cret-0c7e19d2"
		wrongSecret = "wrong-s3cret-77b1e6f0"
	)
	secrets := []string{envSecret, fileSecret, rotated, wrongSecret}
	var outputs []string
	shown := func(what, out string) {
		t.Helper()
		outputs = append(outputs, out)
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s shows a password (%s):\n%s", what, s, out)
			}
		}
	}

	srv := redistest.Start(t)
	srv.CLI(t, "ACL", "SETUSER", "app", "on", ">"+envSecret, ">"+fileSecret, "~tollgate:*", "+@all")
	origin, _ := origin(t)
	dir := t.TempDir()

	// From the environment.
	envFile := filepath.Join(dir, "env.yaml")
	os.WriteFile(envFile, []byte(redisCfg(origin.URL, "    url: redis://"+srv.Addr+"\n    username: app\n    password_env: TG_TEST_REDIS_PASSWORD\n")), 0o644)
	code, out, errOut := runCLI("check", envFile) // the variable unset in this process
	if code == 0 || !strings.Contains(errOut, "TG_TEST_REDIS_PASSWORD is not set") {
		t.Fatalf("check without the variable: %d\n%s%s", code, out, errOut)
	}
	t.Setenv("TG_TEST_REDIS_PASSWORD", envSecret)
	code, out, errOut = runCLI("check", envFile)
	if code != 0 || !strings.Contains(out, "password from $TG_TEST_REDIS_PASSWORD") {
		t.Fatalf("check: %d\n%s%s", code, out, errOut)
	}
	shown("tollgate check (env)", out+errOut)
	p := startServeFile(t, envFile, []string{"TG_TEST_REDIS_PASSWORD=" + envSecret}, "-log-level", "debug")
	if resp, _ := get(t, p.url("/")); resp.StatusCode != 200 {
		t.Fatalf("password from the environment: %d", resp.StatusCode)
	}
	if keysOn(t, srv) != 1 || !strings.Contains(srv.CLI(t, "CLIENT", "LIST"), "user=app") {
		t.Fatalf("not decided on Redis as user app: %s", srv.CLI(t, "CLIENT", "LIST"))
	}
	_, body := get(t, "http://"+p.admin+"/config")
	if !strings.Contains(body, "password_env: TG_TEST_REDIS_PASSWORD") {
		t.Fatalf("/config:\n%s", body)
	}
	shown("/config (env)", body)
	p.signal(os.Interrupt)
	p.wait(10 * time.Second)
	shown("the debug log (env)", p.logText())

	// From a file, then rotated.
	pwFile := filepath.Join(dir, "redis.pw")
	os.WriteFile(pwFile, []byte(fileSecret+"\n"), 0o600)
	file := filepath.Join(dir, "file.yaml")
	os.WriteFile(file, []byte(redisCfg(origin.URL, "    url: redis://app@"+srv.Addr+"\n    password_file: redis.pw\n")), 0o644)
	code, out, errOut = runCLI("check", file)
	if code != 0 || !strings.Contains(out, "password from file redis.pw") {
		t.Fatalf("check: %d\n%s%s", code, out, errOut)
	}
	shown("tollgate check (file)", out+errOut)
	p = startServeFile(t, file, nil, "-log-level", "debug")
	if resp, _ := get(t, p.url("/")); resp.StatusCode != 200 {
		t.Fatalf("password from a file: %d", resp.StatusCode)
	}
	_, body = get(t, "http://"+p.admin+"/config")
	shown("/config (file)", body)

	// A wrong password written to the file: the reload fails, the old
	// connection keeps deciding on Redis.
	os.WriteFile(pwFile, []byte(wrongSecret+"\n"), 0o600)
	eventually(t, "a failed reload", func() bool { return p.metric(`tollgate_config_reloads_total{result="failure"}`) == "1" })
	if !strings.Contains(p.logText(), "WRONGPASS") {
		t.Fatalf("the failed reload does not say the password was refused:\n%s", p.logText())
	}
	srv.CLI(t, "FLUSHALL")
	if resp, _ := get(t, p.url("/")); resp.StatusCode != 200 || keysOn(t, srv) != 1 {
		t.Fatalf("after the refused reload: %d, %d keys: the old connection does not serve", resp.StatusCode, keysOn(t, srv))
	}

	// Rotation: Redis accepts the new password too, the file gets it,
	// the reload connects with it, then the old one is revoked and its
	// connections killed: decisions stay on Redis.
	srv.CLI(t, "ACL", "SETUSER", "app", ">"+rotated)
	os.WriteFile(pwFile, []byte(rotated+"\n"), 0o600)
	eventually(t, "a reload with the rotated password", func() bool { return p.metric(`tollgate_config_reloads_total{result="success"}`) == "1" })
	srv.CLI(t, "ACL", "SETUSER", "app", "<"+fileSecret, "<"+envSecret)
	time.Sleep(1100 * time.Millisecond) // the replaced connection's grace (redis.oldClientGrace)
	srv.CLI(t, "CLIENT", "KILL", "USER", "app")
	srv.CLI(t, "FLUSHALL")
	eventually(t, "decisions on Redis with the rotated password", func() bool {
		resp, _ := get(t, p.url("/"))
		return resp.StatusCode == 200 && keysOn(t, srv) == 1
	})
	_, body = get(t, "http://"+p.admin+"/config")
	shown("/config (rotated)", body)
	p.signal(os.Interrupt)
	p.wait(10 * time.Second)
	shown("the debug log (file, wrong and rotated)", p.logText())

	// A wrong password at start: a clear error, and no password in it.
	os.WriteFile(pwFile, []byte(wrongSecret+"\n"), 0o600)
	code, startOut := runServeToExit(t, file, nil, "-log-level", "debug")
	if code == 0 || !strings.Contains(startOut, "WRONGPASS") || !strings.Contains(startOut, "store.redis: cannot connect") {
		t.Fatalf("start with a wrong password: exit %d\n%s", code, startOut)
	}
	shown("the start error (wrong password)", startOut)
	// The password in the URL, wrong: masked in the error too.
	urlFile := filepath.Join(dir, "url.yaml")
	os.WriteFile(urlFile, []byte(redisCfg(origin.URL, "    url: redis://app:"+wrongSecret+"@"+srv.Addr+"\n")), 0o644)
	code, startOut = runServeToExit(t, urlFile, nil, "-log-level", "debug")
	if code == 0 || !strings.Contains(startOut, "WRONGPASS") {
		t.Fatalf("start with a wrong password in the URL: exit %d\n%s", code, startOut)
	}
	shown("the start error (wrong password in the URL)", startOut)
	if len(outputs) != 9 {
		t.Fatalf("searched %d outputs, want 9", len(outputs))
	}
}

// TestE2ERedisTLS runs the gateway on a Redis that speaks only TLS and
// requires client certificates: it decides there; a CA file replaced by
// another authority's, then an expired client certificate, fail their
// reloads (the old connection keeps deciding on Redis) with the reason;
// and a gateway started with a wrong CA, against an expired server
// certificate or without a client certificate stops at once, saying why.
func TestE2ERedisTLS(t *testing.T) {
	t.Parallel()
	pki := redistest.NewPKI(t)
	srv := redistest.StartTLS(t, redistest.TLSOptions{PKI: pki, ClientCerts: true})
	origin, _ := origin(t)
	dir := t.TempDir()
	ca, cert, key := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	copyTo := func(from, to string) {
		t.Helper()
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	goodCert, goodKey := pki.IssueValid(t, true)
	copyTo(pki.CAFile, ca)
	copyTo(goodCert, cert)
	copyTo(goodKey, key)
	file := filepath.Join(dir, "tls.yaml")
	os.WriteFile(file, []byte(redisCfg(origin.URL, "    url: rediss://"+srv.Addr+"\n    tls: {ca: ca.pem, cert: client.pem, key: client-key.pem, min_version: \"1.2\"}\n")), 0o644)

	p := startServeFile(t, file, nil)
	if resp, _ := get(t, p.url("/")); resp.StatusCode != 200 || keysOn(t, srv) != 1 {
		t.Fatalf("over TLS: %d, %d keys on Redis", resp.StatusCode, keysOn(t, srv))
	}
	onRedis := func(what string) {
		t.Helper()
		srv.CLI(t, "FLUSHALL")
		if resp, _ := get(t, p.url("/")); resp.StatusCode != 200 || keysOn(t, srv) != 1 {
			t.Fatalf("%s: %d, %d keys: not decided on Redis", what, resp.StatusCode, keysOn(t, srv))
		}
	}
	failures := func() string { return p.metric(`tollgate_config_reloads_total{result="failure"}`) }

	other := redistest.NewPKI(t)
	copyTo(other.CAFile, ca)
	eventually(t, "the wrong CA's reload to fail", func() bool { return failures() == "1" })
	if !strings.Contains(p.logText(), "certificate signed by unknown authority") {
		t.Fatalf("the failed reload does not say why:\n%s", p.logText())
	}
	onRedis("after the wrong CA's reload")

	copyTo(pki.CAFile, ca)
	eventually(t, "the good CA back", func() bool { return p.metric(`tollgate_config_reloads_total{result="success"}`) == "1" })
	expCert, expKey := pki.Issue(t, true, time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
	copyTo(expKey, key)
	copyTo(expCert, cert)
	// (The two files are written one after the other: a reload may
	// catch the key without its certificate first, and fail for that.)
	eventually(t, "the expired certificate's reload to fail, saying so", func() bool {
		return strings.Contains(p.logText(), "client.pem expired at")
	})
	if p.metric(`tollgate_config_reloads_total{result="success"}`) != "1" {
		t.Fatal("a reload with an expired client certificate succeeded")
	}
	onRedis("after the expired certificate's reload")
	p.signal(os.Interrupt)
	p.wait(10 * time.Second)

	// At start.
	copyTo(goodCert, cert)
	copyTo(goodKey, key)
	copyTo(other.CAFile, ca)
	code, out := runServeToExit(t, file, nil)
	if code == 0 || !strings.Contains(out, "store.redis: cannot connect") || !strings.Contains(out, "certificate signed by unknown authority") {
		t.Fatalf("start with a wrong CA: exit %d\n%s", code, out)
	}
	copyTo(pki.CAFile, ca)
	sc, sk := pki.Issue(t, false, time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
	expired := redistest.StartTLS(t, redistest.TLSOptions{PKI: pki, CertFile: sc, KeyFile: sk})
	expFile := filepath.Join(dir, "expired.yaml")
	os.WriteFile(expFile, []byte(redisCfg(origin.URL, "    url: rediss://"+expired.Addr+"\n    tls: {ca: ca.pem}\n")), 0o644)
	if code, out := runServeToExit(t, expFile, nil); code == 0 || !strings.Contains(out, "expired") {
		t.Fatalf("start against an expired server certificate: exit %d\n%s", code, out)
	}
	noCert := filepath.Join(dir, "nocert.yaml")
	os.WriteFile(noCert, []byte(redisCfg(origin.URL, "    url: rediss://"+srv.Addr+"\n    tls: {ca: ca.pem}\n")), 0o644)
	if code, out := runServeToExit(t, noCert, nil); code == 0 || !strings.Contains(out, "client certificate") {
		t.Fatalf("start without the client certificate Redis requires: exit %d\n%s", code, out)
	}
}
