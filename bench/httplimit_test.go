package bench

import (
	"net/http"
	"testing"
	"time"

	glhttp "github.com/sethvargo/go-limiter/httplimit"
	"github.com/sethvargo/go-limiter/memorystore"

	"github.com/tollgate-dev/tollgate/httplimit"
	"github.com/tollgate-dev/tollgate/internal/httpbench"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// Middleware overhead per allowed request (issue 3): the same handler
// bare, behind tollgate's httplimit with one rule keyed by client IP, and
// behind go-limiter's httplimit (its IP key func and memory store), each
// never refusing. The ResponseWriter gets a fresh header map per request
// as net/http gives every response, so header insertion is counted
// (internal/httpbench, the harness of httplimit's own benchmarks too).

func BenchmarkHTTPBare(b *testing.B) { httpbench.Serve(b, httpbench.Bare) }

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
	return httplimit.New(e, httplimit.Config{}).Handler(httpbench.Bare)
}

// BenchmarkHTTPTollgateDraft10: the default headers (RateLimit-Policy,
// RateLimit).
func BenchmarkHTTPTollgateDraft10(b *testing.B) { httpbench.Serve(b, tollgateHandler(b, nil)) }

// BenchmarkHTTPTollgateLegacy: X-RateLimit-Limit/Remaining/Reset, the
// headers go-limiter sends.
func BenchmarkHTTPTollgateLegacy(b *testing.B) {
	httpbench.Serve(b, tollgateHandler(b, []string{rules.StyleLegacy}))
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
	httpbench.Serve(b, m.Handle(httpbench.Bare))
}
