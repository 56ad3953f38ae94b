package examples

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/gateway"
	"github.com/tollgate-dev/tollgate/internal/loginattack"
	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/internal/testpki"
)

// TestLoginBruteForce drives login-bruteforce.yaml as an attacker and as a
// user would (issue 26's acceptance), on the memory store and on a real
// redis-server: the gateway in process on a copy of the file with its
// addresses, a test authority's certificate and the store substituted (what
// scripts/login-attack.sh does with `tollgate serve`), in front of a login
// origin, on the TLS listener's two data paths (http2 on: net/http, the
// user speaking HTTP/2; off: fasthttp). The attacker's 200 wrong passwords from one address get exactly
// 5 through, then the 15-minute penalty's Retry-After, counting down to
// the second (a 2 s pause after its first guess tells the penalty from
// the window); 50 addresses sharing one TLS stack, 4 wrong passwords each,
// get exactly 20 through before all of them are refused, none by its own
// count; a user with a TLS stack of its own makes 2 typos and logs in 6
// times, never refused (8 attempts: were logins counted, the 6th would
// be). loginattack.Report.Check is the list of promises.
func TestLoginBruteForce(t *testing.T) {
	for _, c := range []struct{ store, http2 string }{{"memory", "on"}, {"memory", "off"}, {"redis", "on"}} {
		t.Run(c.store+"/http2-"+c.http2, func(t *testing.T) {
			redisURL := ""
			var srv *redistest.Server
			if c.store == "redis" {
				srv = redistest.Start(t)
				redisURL = "redis://" + srv.Addr
			}
			p, origin := serveLogin(t, redisURL, c.http2)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := loginattack.Play(ctx, p, origin)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("\n%s", r)
			for _, bad := range r.Check(loginattack.Expect{PerIP: 5, PerJA4: 20, Penalty: 15 * time.Minute}) {
				t.Error(bad)
			}
			if srv != nil {
				// The counters and penalties live on Redis: the
				// attacker's and the botnet's penalties, 50 + 3 per-IP
				// logs and 3 per-fingerprint ones at least.
				if n, _ := strconv.Atoi(strings.TrimSpace(srv.CLI(t, "DBSIZE"))); n < 2 {
					t.Errorf("%d keys on Redis", n)
				}
			}
		})
	}
}

// serveLogin serves login-bruteforce.yaml in process, as
// scripts/login-attack.sh serves it with tollgate serve, and returns the
// players' plan against it and its origin.
func serveLogin(t *testing.T, redisURL, http2 string) (loginattack.Plan, *loginattack.Origin) {
	t.Helper()
	dir := t.TempDir()
	cert, key, roots := testpki.Server(t)
	const password = "correct horse battery staple"
	origin := loginattack.NewOrigin(password)
	osrv := httptest.NewServer(origin)
	t.Cleanup(osrv.Close)
	src, err := os.ReadFile("login-bruteforce.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := loginattack.Configure(src, loginattack.Substitute{
		Listen: "127.0.0.1:0", Cert: cert, Key: key, Upstream: osrv.URL, Redis: redisURL, HTTP2: http2,
	})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "login.yaml")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(cfg, gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return loginattack.Plan{Target: "https://" + g.Addr().String(), Roots: roots, Password: password}, origin
}
