package httplimit

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// benchWriter is a minimal ResponseWriter with a fresh header map per
// request, as net/http gives every response, so the cost of inserting
// header fields is counted.
type benchWriter struct {
	h      http.Header
	status int
}

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) WriteHeader(code int)        { w.status = code }
func (w *benchWriter) Write(b []byte) (int, error) { return len(b), nil }

var okBody = []byte("ok\n")

// bare is the handler both benchmarks serve: it sets one header and
// writes a small body, like a typical API handler.
var bare = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header()["Content-Type"] = []string{"text/plain"}
	w.Write(okBody)
})

func benchServe(b *testing.B, h http.Handler) {
	r := httptest.NewRequest("GET", "/items/42", nil)
	r.RemoteAddr = "192.0.2.1:4711"
	w := &benchWriter{}
	b.ReportAllocs()
	for b.Loop() {
		w.h = make(http.Header)
		h.ServeHTTP(w, r)
	}
	if w.status != 0 && w.status != 200 {
		b.Fatalf("status %d", w.status)
	}
}

// BenchmarkBare is the peer: the handler alone.
func BenchmarkBare(b *testing.B) { benchServe(b, bare) }

// BenchmarkLimitedIP is the handler behind one rule keyed by client IP
// (token bucket, never refusing), with the default draft-10 headers.
func BenchmarkLimitedIP(b *testing.B) {
	st, err := memory.New(memory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	e, err := rules.New(rules.Config{Rules: []rules.Rule{{
		Name:     "per-ip",
		Policies: []rules.Policy{{Rate: "1000000000/s"}},
	}}}, st)
	if err != nil {
		b.Fatal(err)
	}
	benchServe(b, New(e, Config{}).Handler(bare))
}

// BenchmarkLimitedIPNoHeaders is the same rule with headers off: the
// engine and store alone.
func BenchmarkLimitedIPNoHeaders(b *testing.B) {
	st, err := memory.New(memory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	e, err := rules.New(rules.Config{
		Headers: rules.Headers{Styles: []string{}},
		Rules:   []rules.Rule{{Name: "per-ip", Policies: []rules.Policy{{Rate: "1000000000/s"}}}},
	}, st)
	if err != nil {
		b.Fatal(err)
	}
	benchServe(b, New(e, Config{}).Handler(bare))
}

// TestMiddlewareAllocs holds the allowed path to its budget: at most 4
// allocations added to the bare handler's for one IP rule with headers.
func TestMiddlewareAllocs(t *testing.T) {
	st, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := rules.New(rules.Config{Rules: []rules.Rule{{Name: "per-ip", Policies: []rules.Policy{{Rate: "1000000000/s"}}}}}, st)
	if err != nil {
		t.Fatal(err)
	}
	limited := New(e, Config{}).Handler(bare)
	r := httptest.NewRequest("GET", "/items/42", nil)
	r.RemoteAddr = "192.0.2.1:4711"
	w := &benchWriter{}
	measure := func(h http.Handler) float64 {
		return testing.AllocsPerRun(1000, func() {
			w.h = make(http.Header)
			h.ServeHTTP(w, r)
		})
	}
	base, lim := measure(bare), measure(limited)
	t.Logf("bare %v allocs, limited %v allocs", base, lim)
	if lim-base > 4 {
		t.Fatalf("middleware adds %v allocs, budget 4", lim-base)
	}
	if w.h.Get("RateLimit") == "" {
		t.Fatal("no RateLimit header")
	}
}
