package forwardauth_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/tollgate-dev/tollgate/forwardauth"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// Example answers a proxy (at 10.0.0.1) asking about a client's requests
// to /api/: one a minute per client address, read from X-Forwarded-For
// because the proxy is trusted.
func Example() {
	// A fixed clock keeps the output exact.
	store, err := memory.New(memory.Config{Clock: func() int64 { return 1_700_000_000e9 }})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	proxies := []string{"10.0.0.1"}
	engine, err := rules.New(rules.Config{
		ClientIP: rules.ClientIP{TrustedProxies: proxies},
		Rules: []rules.Rule{{
			Name:     "api",
			Match:    rules.Match{PathPrefixes: []string{"/api/"}},
			Policies: []rules.Policy{{Algorithm: "fixed_window", Limit: 1, Window: "1m"}},
		}},
	}, store)
	if err != nil {
		log.Fatal(err)
	}
	h, err := forwardauth.New(engine, forwardauth.Config{TrustedProxies: proxies})
	if err != nil {
		log.Fatal(err)
	}

	// What Traefik or Caddy sends (the forwarded style, at /auth).
	ask := func() *http.Response {
		r := httptest.NewRequest("GET", "/auth", nil)
		r.RemoteAddr = "10.0.0.1:51000"
		r.Header.Set("X-Forwarded-Method", "GET")
		r.Header.Set("X-Forwarded-Uri", "/api/items?page=2")
		r.Header.Set("X-Forwarded-Host", "api.example")
		r.Header.Set("X-Forwarded-For", "203.0.113.7")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Result()
	}
	allowed := ask()
	fmt.Println(allowed.StatusCode, allowed.Header.Get("RateLimit"))
	refused := ask()
	fmt.Println(refused.StatusCode, refused.Header.Get("RateLimit"), "Retry-After:", refused.Header.Get("Retry-After"))
	// Output:
	// 200 "api";r=0;t=40
	// 429 "api";r=0;t=40 Retry-After: 40
}
