package examples

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// testGossipKey is the gossip-fleet.yaml secret key this test sets in the
// environment (the file reads it from TOLLGATE_GOSSIP_KEY, as its comments
// say): a value of the test's own, never one to deploy.
const testGossipKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// noRoutesWarning is the one warning tollgate check gives for
// forwardauth/tollgate.yaml: that file has no routes because forward-auth
// reads none (the file's comments say so).
const noRoutesWarning = "forwardauth/tollgate.yaml: warning: no routes:"

// TestEveryExamplePassesTollgateCheck runs the tollgate binary, built from
// this tree, on every example exactly as shipped: each tollgate file
// through tollgate check FILE, the envoy-rls directory through tollgate
// check -envoy-rls DIR, each exiting 0 and warning of nothing (but
// forwardauth/tollgate.yaml's missing routes). The files that are not
// tollgate's are checked as what they are, and a file of examples/ this
// test does not know fails it, so a new example cannot go unchecked.
func TestEveryExamplePassesTollgateCheck(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tollgate")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/tollgate").CombinedOutput(); err != nil {
		t.Fatalf("go build ../cmd/tollgate: %v\n%s", err, out)
	}
	check := func(t *testing.T, args ...string) (stdout, stderr string) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"check"}, args...)...)
		cmd.Env = append(os.Environ(), "TOLLGATE_GOSSIP_KEY="+testGossipKey)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil {
			t.Fatalf("tollgate check %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, o.String(), e.String())
		}
		return o.String(), e.String()
	}

	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files = append(files, filepath.ToSlash(path))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkedEnvoy := false
	for _, f := range files {
		switch {
		case strings.HasSuffix(f, ".go"):
			// this package's documentation and tests
		case f == "api-key-members.txt":
			// the members file api-key-tiers.yaml names: its check reads it
			b, err := os.ReadFile("api-key-tiers.yaml")
			if err != nil || !bytes.Contains(b, []byte("api-key-members.txt")) {
				t.Errorf("%s: no example names it (%v)", f, err)
			}
		case f == "monitoring-ranges.txt", f == "internal-api-keys.txt":
			// the list files exempt-monitoring.yaml names: its check reads them
			b, err := os.ReadFile("exempt-monitoring.yaml")
			if err != nil || !bytes.Contains(b, []byte(f)) {
				t.Errorf("%s: no example names it (%v)", f, err)
			}
		case f == "tls/example-cert.pem", f == "tls/example-key.pem":
			// the self-signed pair login-bruteforce.yaml names (its
			// check loads it); its comments say the key is public
			b, err := os.ReadFile("login-bruteforce.yaml")
			if err != nil || !bytes.Contains(b, []byte(f)) {
				t.Errorf("%s: login-bruteforce.yaml does not name it (%v)", f, err)
			}
		case f == "geoip-example.mmdb":
			// the database per-country-api.yaml names: its check opens
			// it, TestExampleGeoIPDatabase reads it
			b, err := os.ReadFile("per-country-api.yaml")
			if err != nil || !bytes.Contains(b, []byte("geoip-example.mmdb")) {
				t.Errorf("%s: no example names it (%v)", f, err)
			}
		case strings.HasPrefix(f, "envoy-rls/"):
			if checkedEnvoy {
				continue
			}
			checkedEnvoy = true
			t.Run("envoy-rls", func(t *testing.T) {
				out, errOut := check(t, "-envoy-rls", "envoy-rls")
				if errOut != "" || !strings.Contains(out, "all rate limit configs ok") {
					t.Errorf("stdout %q, stderr %q", out, errOut)
				}
			})
		case f == "forwardauth/traefik.yaml":
			t.Run(f, checkTraefik)
		case f == "forwardauth/nginx.conf", f == "forwardauth/Caddyfile":
			// run with real nginx and Caddy by forwardauth's
			// TestNginxSnippet* and TestCaddySnippet* tests
		case strings.HasSuffix(f, ".yaml"):
			t.Run(f, func(t *testing.T) {
				out, errOut := check(t, f)
				if !strings.HasPrefix(out, f+": valid\n") {
					t.Errorf("stdout:\n%s", out)
				}
				if f == "forwardauth/tollgate.yaml" {
					if !strings.HasPrefix(errOut, noRoutesWarning) || strings.Count(errOut, "\n") != 1 {
						t.Errorf("stderr: %q, want only the no-routes warning", errOut)
					}
				} else if errOut != "" {
					t.Errorf("warnings: %s", errOut)
				}
				if strings.Contains(out+errOut, testGossipKey) {
					t.Errorf("the gossip secret key is shown")
				}
			})
		default:
			t.Errorf("%s: this test does not know how to check it", f)
		}
	}
	if !checkedEnvoy {
		t.Error("no envoy-rls directory")
	}
}

// checkTraefik checks forwardauth/traefik.yaml as what it is, a Traefik
// dynamic configuration (Traefik itself is not installable here: the
// file's comments say why): valid YAML, its ForwardAuth middleware asking
// the address tollgate forward-auth listens on in the command its
// comments and tollgate.yaml's give, on the forwarded style's /auth, not
// trusting clients' own X-Forwarded-*, copying the RateLimit fields.
func checkTraefik(t *testing.T) {
	b, err := os.ReadFile("forwardauth/traefik.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		HTTP struct {
			Routers map[string]struct {
				EntryPoints []string `yaml:"entryPoints"`
				Rule        string   `yaml:"rule"`
				Middlewares []string `yaml:"middlewares"`
				Service     string   `yaml:"service"`
			} `yaml:"routers"`
			Middlewares map[string]struct {
				ForwardAuth *struct {
					Address             string   `yaml:"address"`
					TrustForwardHeader  bool     `yaml:"trustForwardHeader"`
					AuthResponseHeaders []string `yaml:"authResponseHeaders"`
				} `yaml:"forwardAuth"`
			} `yaml:"middlewares"`
			Services map[string]any `yaml:"services"`
		} `yaml:"http"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	const listen = "tollgate forward-auth -config tollgate.yaml -listen 127.0.0.1:9000"
	for _, f := range []string{"forwardauth/traefik.yaml", "forwardauth/tollgate.yaml"} {
		if c, _ := os.ReadFile(f); !bytes.Contains(c, []byte(listen)) {
			t.Errorf("%s does not give the command %q", f, listen)
		}
	}
	if len(doc.HTTP.Routers) == 0 {
		t.Fatal("no routers")
	}
	for name, r := range doc.HTTP.Routers {
		if _, ok := doc.HTTP.Services[r.Service]; !ok {
			t.Errorf("router %s: service %q is not defined", name, r.Service)
		}
		for _, m := range r.Middlewares {
			mw, ok := doc.HTTP.Middlewares[m]
			if !ok || mw.ForwardAuth == nil {
				t.Errorf("router %s: middleware %q is not a defined forwardAuth", name, m)
				continue
			}
			fa := mw.ForwardAuth
			if fa.Address != "http://127.0.0.1:9000/auth" {
				t.Errorf("forwardAuth.address = %q, want tollgate forward-auth's -listen 127.0.0.1:9000, path /auth", fa.Address)
			}
			if fa.TrustForwardHeader {
				t.Error("trustForwardHeader is true: a client's own X-Forwarded-* would reach tollgate")
			}
			if strings.Join(fa.AuthResponseHeaders, ",") != "RateLimit,RateLimit-Policy" {
				t.Errorf("authResponseHeaders = %v", fa.AuthResponseHeaders)
			}
		}
	}
}
