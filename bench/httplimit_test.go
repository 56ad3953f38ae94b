package bench

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	glhttp "github.com/sethvargo/go-limiter/httplimit"
	"github.com/sethvargo/go-limiter/memorystore"

	"github.com/tollgate-dev/tollgate/httplimit"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// Middleware overhead per allowed request (issue 3): the same handler
// bare, behind tollgate's httplimit with one rule keyed by client IP, and
// behind go-limiter's httplimit (its IP key func and memory store), each
// never refusing. The ResponseWriter gets a fresh header map per request
// as net/http gives every response, so header insertion is counted.

type hlWriter struct {
	h      http.Header
	status int
}

func (w *hlWriter) Header() http.Header         { return w.h }
func (w *hlWriter) WriteHeader(code int)        { w.status = code }
func (w *hlWriter) Write(b []byte) (int, error) { return len(b), nil }

var hlBody = []byte("ok\n")

var hlBare = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header()["Content-Type"] = []string{"text/plain"}
	w.Write(hlBody)
})

func hlServe(b *testing.B, h http.Handler) {
	r := httptest.NewRequest("GET", "/items/42", nil)
	r.RemoteAddr = "192.0.2.1:4711"
	w := &hlWriter{}
	b.ReportAllocs()
	for b.Loop() {
		w.h = make(http.Header)
		h.ServeHTTP(w, r)
	}
	if w.status != 0 && w.status != 200 {
		b.Fatalf("status %d", w.status)
	}
}

func BenchmarkHTTPBare(b *testing.B) { hlServe(b, hlBare) }

func tollgateHandler(b *testing.B, styles []string) http.Handler {
	st, err := memory.New(memory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	e, err := rules.New(rules.Config{
		Headers: rules.Headers{Styles: styles},
		Rules:   []rules.Rule{{Name: "per-ip", Policies: []rules.Policy{{Rate: "1000000000/s"}}}},
	}, st)
	if err != nil {
		b.Fatal(err)
	}
	return httplimit.New(e, httplimit.Config{}).Handler(hlBare)
}

// BenchmarkHTTPTollgateDraft10: the default headers (RateLimit-Policy,
// RateLimit).
func BenchmarkHTTPTollgateDraft10(b *testing.B) { hlServe(b, tollgateHandler(b, nil)) }

// BenchmarkHTTPTollgateLegacy: X-RateLimit-Limit/Remaining/Reset, the
// headers go-limiter sends.
func BenchmarkHTTPTollgateLegacy(b *testing.B) {
	hlServe(b, tollgateHandler(b, []string{rules.StyleLegacy}))
}

func BenchmarkHTTPGoLimiter(b *testing.B) {
	st, err := memorystore.New(&memorystore.Config{Tokens: 1_000_000_000, Interval: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close(b.Context()) })
	m, err := glhttp.NewMiddleware(st, glhttp.IPKeyFunc())
	if err != nil {
		b.Fatal(err)
	}
	hlServe(b, m.Handle(hlBare))
}
