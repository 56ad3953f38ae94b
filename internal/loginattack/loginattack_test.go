package loginattack

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-dev/tollgate/ja4"
)

// The three stacks have three fingerprints, and the botnet's is one
// whatever address it sends from: what the example's JA4 rule relies on.
func TestStacksFingerprints(t *testing.T) {
	a, b, u := Stacks(nil)
	fa, err := Fingerprint(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, _ := Fingerprint(b)
	fu, _ := Fingerprint(u)
	t.Logf("attacker %s, botnet %s, user %s", fa, fb, fu)
	if fa == fb || fb == fu || fa == fu || fa == "" || fb == "" {
		t.Fatalf("fingerprints not distinct: %q %q %q", fa, fb, fu)
	}
	if !strings.HasSuffix(strings.SplitN(fu, "_", 2)[0], "h2") || !strings.HasSuffix(strings.SplitN(fb, "_", 2)[0], "h1") {
		t.Errorf("ALPN: user %s (want h2), botnet %s (want h1)", fu, fb)
	}

	// Two bots, two addresses, one fingerprint, seen by a server.
	var mu sync.Mutex
	seen := map[string]string{} // source address -> JA4
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLS = &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		mu.Lock()
		seen[h.Conn.RemoteAddr().String()] = ja4.String(h)
		mu.Unlock()
		return nil, nil
	}}
	srv.StartTLS()
	defer srv.Close()
	b.RootCAs = srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	for i := range 2 {
		c := Client(botAddr(i), b, 5*time.Second)
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		c.CloseIdleConnections()
	}
	if len(seen) != 2 {
		t.Fatalf("seen %v, want two sources", seen)
	}
	for src, f := range seen {
		if !strings.HasPrefix(src, "127.0.0.2:") && !strings.HasPrefix(src, "127.0.0.3:") {
			t.Errorf("a bot came from %s", src)
		}
		if f != fb {
			t.Errorf("%s sent %s, want the botnet's %s", src, f, fb)
		}
	}
}

func TestOrigin(t *testing.T) {
	o := NewOrigin("s3cret")
	post := func(who, pw string) int {
		req := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"password": {pw}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Scenario", who)
		w := httptest.NewRecorder()
		o.ServeHTTP(w, req)
		return w.Code
	}
	if c := post(User, "s3cret"); c != 200 {
		t.Errorf("right password: %d", c)
	}
	if c := post(User, "s3cre"); c != 401 {
		t.Errorf("wrong password: %d", c)
	}
	if c := post("mallory", ""); c != 401 {
		t.Errorf("no password: %d", c)
	}
	if o.Reached(User) != 2 || o.Reached("other") != 1 || o.Reached("mallory") != 0 {
		t.Errorf("counts %v", o.reached)
	}
}

func TestConfigure(t *testing.T) {
	src := []byte("# c\nlisten:\n  addr: \":8443\"\n  tls: {cert: a.pem, key: b.pem}\nroutes:\n  - path: /\n    upstream: http://127.0.0.1:3000\n  - path: /x\n    upstream: http://h:1\nrules: []\n")
	out, err := Configure(src, Substitute{Listen: "127.0.0.1:1", Cert: "/c.pem", Key: "/k.pem", Upstream: "http://127.0.0.1:2", Redis: "redis://127.0.0.1:3"})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Listen struct {
			Addr string
			TLS  struct{ Cert, Key string } `yaml:"tls"`
		}
		Admin  struct{ Addr string }
		Reload struct{ Watch bool }
		Routes []struct{ Path, Upstream string }
		Store  struct{ Redis struct{ URL string } }
		Rules  []any
	}
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.Listen.Addr != "127.0.0.1:1" || got.Listen.TLS.Cert != "/c.pem" || got.Listen.TLS.Key != "/k.pem" ||
		got.Admin.Addr != "off" || got.Reload.Watch || len(got.Routes) != 2 || got.Routes[1].Upstream != "http://127.0.0.1:2" ||
		got.Routes[1].Path != "/x" || got.Store.Redis.URL != "redis://127.0.0.1:3" {
		t.Errorf("configured:\n%s", out)
	}
}

// Check passes a run that keeps the example's promises and names each
// broken one.
func TestCheck(t *testing.T) {
	e := Expect{PerIP: 5, PerJA4: 20, Penalty: 15 * time.Minute}
	run := func(name string, n, limit int) Outcome {
		o := Outcome{Name: name, Sources: 1, JA4: name}
		for i := range n {
			a := Attempt{Source: netip.MustParseAddr("127.0.0.9"), Status: 401, RetryAfter: -1, At: time.Duration(i) * 300 * time.Millisecond}
			if i >= limit {
				a.Status = 429
				a.RetryAfter = 900 - int(time.Duration(i-limit)*300*time.Millisecond/time.Second)
			}
			o.Attempts = append(o.Attempts, a)
		}
		o.Reached = min(n, limit)
		return o
	}
	good := func() *Report {
		r := &Report{Attacker: run(Attacker, 200, 5), Botnet: run(Botnet, 200, 20), User: run(User, 3, 3)}
		r.Botnet.Sources = 50
		r.User.Attempts[2].Status = 200
		return r
	}
	if bad := good().Check(e); len(bad) != 0 {
		t.Fatalf("a good run: %q", bad)
	}
	for what, spoil := range map[string]func(r *Report){
		"reached the origin":        func(r *Report) { r.Attacker.Reached = 6 },
		"first refusal at":          func(r *Report) { r.Attacker.Attempts[5].Status = 401 },
		"Retry-After 1,":            func(r *Report) { r.Botnet.Attempts[30].RetryAfter = 1 },
		"Retry-After 901":           func(r *Report) { r.Botnet.Attempts[30].RetryAfter = 901 },
		"user: refused 1 times":     func(r *Report) { r.User.Attempts[1].Status = 429 },
		"share a fingerprint":       func(r *Report) { r.User.JA4 = r.Botnet.JA4 },
		"per-IP limit":              func(r *Report) { r.Botnet.Sources = 10 },
		"after the penalty began":   func(r *Report) { r.Attacker.Attempts[100].Status = 401 },
		"of 3 attempts reached the": func(r *Report) { r.User.Reached = 2 },
	} {
		r := good()
		spoil(r)
		bad := r.Check(e)
		if !strings.Contains(strings.Join(bad, "\n"), what) {
			t.Errorf("spoiled (%s): %q", what, bad)
		}
	}
}
