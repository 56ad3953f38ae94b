package httplimit

import (
	"net/http"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/httpbench"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// BenchmarkBare is the peer: the handler alone.
func BenchmarkBare(b *testing.B) { httpbench.Serve(b, httpbench.Bare) }

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
	httpbench.Serve(b, New(e, Config{}).Handler(httpbench.Bare))
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
	httpbench.Serve(b, New(e, Config{}).Handler(httpbench.Bare))
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
	limited := New(e, Config{}).Handler(httpbench.Bare)
	r := httpbench.Request()
	w := &httpbench.Writer{}
	measure := func(h http.Handler) float64 {
		return testing.AllocsPerRun(1000, func() {
			w.H = make(http.Header)
			h.ServeHTTP(w, r)
		})
	}
	base, lim := measure(httpbench.Bare), measure(limited)
	t.Logf("bare %v allocs, limited %v allocs", base, lim)
	if lim-base > 4 {
		t.Fatalf("middleware adds %v allocs, budget 4", lim-base)
	}
	if w.H.Get("RateLimit") == "" {
		t.Fatal("no RateLimit header")
	}
}
