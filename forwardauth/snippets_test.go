package forwardauth

import (
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Traefik is not packaged here (not in Debian; its module's dependencies
// are refused by the Go module proxy), so its snippet is not run; this checks
// that it parses and asks the forwarded-style endpoint at the address the
// other snippets use, with the client's X-Forwarded-* kept out.
func TestTraefikSnippetAsksTheForwardedStyleEndpoint(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "examples", "forwardauth", "traefik.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		HTTP struct {
			Middlewares map[string]struct {
				ForwardAuth struct {
					Address             string   `yaml:"address"`
					TrustForwardHeader  bool     `yaml:"trustForwardHeader"`
					AuthResponseHeaders []string `yaml:"authResponseHeaders"`
				} `yaml:"forwardAuth"`
			} `yaml:"middlewares"`
			Services map[string]struct {
				LoadBalancer struct {
					Servers []struct {
						URL string `yaml:"url"`
					} `yaml:"servers"`
				} `yaml:"loadBalancer"`
			} `yaml:"services"`
		} `yaml:"http"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	fa := doc.HTTP.Middlewares["tollgate"].ForwardAuth
	if fa.Address != "http://"+snippetTollgate+"/auth" || fa.TrustForwardHeader {
		t.Errorf("forwardAuth %+v: want address http://%s/auth and trustForwardHeader false", fa, snippetTollgate)
	}
	if len(fa.AuthResponseHeaders) != 2 || fa.AuthResponseHeaders[0] != "RateLimit" || fa.AuthResponseHeaders[1] != "RateLimit-Policy" {
		t.Errorf("authResponseHeaders %v", fa.AuthResponseHeaders)
	}
	if s := doc.HTTP.Services["origin"].LoadBalancer.Servers; len(s) != 1 || s[0].URL != "http://"+snippetOrigin {
		t.Errorf("origin servers %v", s)
	}
}
