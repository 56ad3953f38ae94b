package forwardauth

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// discard is a ResponseWriter that keeps nothing but its header map,
// reused between requests, so that the benchmark measures the handler.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

// BenchmarkServeHTTPAllowed is one allowed forwarded-style decision: a
// per-IP token bucket on the memory store, the fields read from the auth
// request, the RateLimit fields written.
func BenchmarkServeHTTPAllowed(b *testing.B) {
	st, err := memory.New(memory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	e, err := rules.New(rules.Config{
		ClientIP: rules.ClientIP{TrustedProxies: []string{proxy}},
		Rules:    []rules.Rule{{Name: "api", Match: rules.Match{PathPrefixes: []string{"/api/"}}, Policies: []rules.Policy{{Rate: "1000000000/s"}}}},
	}, st)
	if err != nil {
		b.Fatal(err)
	}
	h, err := New(e, Config{TrustedProxies: []string{proxy}})
	if err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/auth", nil)
	r.RemoteAddr = proxy + ":40000"
	for k, v := range forwarded("GET", "/api/items?x=1", "203.0.113.7") {
		r.Header.Set(k, v)
	}
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		h.ServeHTTP(w, r)
	}
}
