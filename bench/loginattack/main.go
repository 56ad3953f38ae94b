// Command loginattack drives examples/login-bruteforce.yaml through a real
// `tollgate serve`, as an attacker and as a user would (issue 26's
// acceptance; the players are internal/loginattack's):
//
//   - it starts a login origin on 127.0.0.1 (200 for the right password,
//     401 for any other) and `tollgate serve` on a copy of the example
//     with its addresses substituted (its certificate pair, self-signed
//     for 127.0.0.1, by absolute paths) and, with -redis, the Redis store;
//
//   - the attacker sends 200 wrong passwords from 127.0.0.250 (pausing 2 s
//     after the first); the botnet 50 addresses (127.0.0.2 to
//     127.0.0.51) sharing one TLS stack, 4 wrong passwords each, in
//     turns; the user, from 127.0.0.251 with a TLS stack of its own, 2
//     typos, then the right password, then 5 more logins;
//
//   - it prints what reached the origin, the refusals and their
//     Retry-After, and checks them against the example's limits: at most
//     the limit per window through, then the penalty's Retry-After;
//     the user never refused. It exits 1 when a check fails.
//
//     cd bench && go run ./loginattack -tollgate /path/to/tollgate [-redis redis://127.0.0.1:6379]
//
// scripts/login-attack.sh builds tollgate and runs it, with a
// redis-server of its own for -redis. The same players run in
// examples/login_test.go against the gateway in process.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-dev/tollgate/internal/loginattack"
)

func main() {
	bin := flag.String("tollgate", "tollgate", "the tollgate binary")
	example := flag.String("example", "../examples/login-bruteforce.yaml", "the example to serve")
	redis := flag.String("redis", "", "a Redis URL for the store (default: the memory store)")
	perIP := flag.Int("per-ip", 5, "the example's failed logins per address and window")
	perJA4 := flag.Int("per-ja4", 20, "the example's failed logins per TLS fingerprint and window")
	penalty := flag.Duration("penalty", 15*time.Minute, "the example's penalty")
	http2 := flag.String("http2", "", `listen.http2: "off" for the fasthttp data path (default: the example's)`)
	keep := flag.Bool("keep", false, "keep the working directory (configuration, log)")
	flag.Parse()
	if err := run(*bin, *example, *redis, *http2, *keep, loginattack.Expect{PerIP: *perIP, PerJA4: *perJA4, Penalty: *penalty}); err != nil {
		fmt.Fprintln(os.Stderr, "loginattack:", err)
		os.Exit(1)
	}
}

func run(bin, example, redisURL, http2 string, keep bool, e loginattack.Expect) error {
	dir, err := os.MkdirTemp("", "loginattack-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("working directory:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	// The example's own self-signed pair, for 127.0.0.1 and localhost.
	src, err := os.ReadFile(example)
	if err != nil {
		return err
	}
	var ex struct {
		Listen struct {
			TLS struct{ Cert, Key string } `yaml:"tls"`
		} `yaml:"listen"`
	}
	if err := yaml.Unmarshal(src, &ex); err != nil || ex.Listen.TLS.Cert == "" {
		return fmt.Errorf("%s: no listen.tls (%v)", example, err)
	}
	resolve := func(f string) string {
		if filepath.IsAbs(f) {
			return f
		}
		abs, _ := filepath.Abs(filepath.Join(filepath.Dir(example), f))
		return abs
	}
	cert, key := resolve(ex.Listen.TLS.Cert), resolve(ex.Listen.TLS.Key)
	pem, err := os.ReadFile(cert)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return fmt.Errorf("%s: no certificate", cert)
	}
	const password = "correct horse battery staple"
	origin := loginattack.NewOrigin(password)
	ol, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	osrv := &http.Server{Handler: origin, ReadHeaderTimeout: 5 * time.Second}
	go osrv.Serve(ol)
	defer osrv.Close()

	addr, err := freeAddr()
	if err != nil {
		return err
	}
	cfg, err := loginattack.Configure(src, loginattack.Substitute{
		Listen: addr, Cert: cert, Key: key, Upstream: "http://" + ol.Addr().String(), Redis: redisURL, HTTP2: http2,
	})
	if err != nil {
		return fmt.Errorf("%s: %w", example, err)
	}
	file := filepath.Join(dir, "tollgate.yaml")
	if err := os.WriteFile(file, cfg, 0o644); err != nil {
		return err
	}
	out, err := exec.Command(bin, "check", file).CombinedOutput()
	if err != nil {
		return fmt.Errorf("tollgate check: %v\n%s", err, out)
	}
	fmt.Printf("tollgate check (%s as served):\n%s\n\n", example, strings.TrimSpace(string(out)))
	logf, err := os.Create(filepath.Join(dir, "tollgate.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "serve", "-config", file, "-log-level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	target := "https://" + addr
	if err := ready(target, roots); err != nil {
		b, _ := os.ReadFile(logf.Name())
		return fmt.Errorf("tollgate serve never answered: %v\n%s", err, b)
	}
	store := "the memory store"
	if redisURL != "" {
		store = "Redis at " + redisURL
	}
	fmt.Printf("tollgate serve on %s (%s), origin on %s\n\n", target, store, ol.Addr())

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	r, err := loginattack.Play(ctx, loginattack.Plan{Target: target, Roots: roots, Password: password}, origin)
	if err != nil {
		return err
	}
	fmt.Print(r.String())
	fmt.Printf("(%d requests in %.1f s)\n\n", len(r.Attacker.Attempts)+len(r.Botnet.Attempts)+len(r.User.Attempts), time.Since(start).Seconds())
	if bad := r.Check(e); len(bad) > 0 {
		return fmt.Errorf("the example's promises broken:\n  %s", strings.Join(bad, "\n  "))
	}
	fmt.Printf("ok: at most %d (per address) and %d (per fingerprint) failures through, then a %s penalty; the user never refused\n", e.PerIP, e.PerJA4, e.Penalty)
	return nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// ready waits for the gateway to answer GET / (not a login attempt).
func ready(target string, roots *x509.CertPool) error {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	defer c.CloseIdleConnections()
	var err error
	for range 100 {
		var resp *http.Response
		if resp, err = c.Get(target + "/"); err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}
