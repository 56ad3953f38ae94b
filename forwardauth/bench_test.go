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
	h, r := allowedRequest(b)
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		h.ServeHTTP(w, r)
	}
}

// TestServeHTTPAllowedAllocs bounds the allocations of an allowed
// decision: the RateLimit fields' values and their one value slice
// (httplimit.SetHeaders), and the original request's view, which the
// engine's interface takes. Cache-Control is set without allocating, and
// the peer is parsed once.
func TestServeHTTPAllowedAllocs(t *testing.T) {
	h, r := allowedRequest(t)
	w := &discard{h: http.Header{}}
	if n := testing.AllocsPerRun(1000, func() {
		clear(w.h)
		h.ServeHTTP(w, r)
	}); n > 3 {
		t.Errorf("an allowed decision allocates %v times, want at most 3", n)
	}
	if got := w.h.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", got)
	}
}

// allowedRequest is a Handler over a per-IP token bucket on the memory
// store that never refuses, and a forwarded-style auth request it allows.
func allowedRequest(tb testing.TB) (*Handler, *http.Request) {
	st, err := memory.New(memory.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	e, err := rules.New(rules.Config{
		ClientIP: rules.ClientIP{TrustedProxies: []string{proxy}},
		Rules:    []rules.Rule{{Name: "api", Match: rules.Match{PathPrefixes: []string{"/api/"}}, Policies: []rules.Policy{{Rate: "1000000000/s"}}}},
	}, st)
	if err != nil {
		tb.Fatal(err)
	}
	h, err := New(e, Config{TrustedProxies: []string{proxy}})
	if err != nil {
		tb.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/auth", nil)
	r.RemoteAddr = proxy + ":40000"
	for k, v := range forwarded("GET", "/api/items?x=1", "203.0.113.7") {
		r.Header.Set(k, v)
	}
	return h, r
}
