package httplimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// keyedLimiter limits 1 request per hour per key and records what a
// typical backend authenticates with: the first X-Api-Key line and the
// first api_key parameter that decodes.
func keyedLimiter(t *testing.T, key string) (http.Handler, *[]string) {
	t.Helper()
	st, err := memory.New(memory.Config{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e, err := rules.New(rules.Config{Rules: []rules.Rule{{
		Name: "per-key", Key: rules.Key{key},
		Policies: []rules.Policy{{Algorithm: "token_bucket", Rate: "1/h", Burst: 1}},
	}}}, st)
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	h := New(e, Config{}).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served = append(served, r.Header.Get("X-Api-Key")+"|"+r.URL.Query().Get("api_key"))
	}))
	return h, &served
}

// A second X-Api-Key line does not give the caller a fresh counter: the
// key is the first line, which is what the backend reads.
func TestHeaderKeyIgnoresExtraLines(t *testing.T) {
	h, served := keyedLimiter(t, "header:X-API-Key")
	for _, extra := range []string{"", "", "a", "b"} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Add("X-API-Key", "K")
		if extra != "" {
			r.Header.Add("X-API-Key", extra)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	if len(*served) != 1 {
		t.Errorf("1 per hour per API key, and the backend served key K %d times: %v", len(*served), *served)
	}
}

// A first api_key that does not decode is skipped, as net/url skips it,
// so the key is the value the backend reads.
func TestQueryKeySkipsUndecodableValues(t *testing.T) {
	h, served := keyedLimiter(t, "query:api_key")
	for _, q := range []string{"api_key=K", "api_key=%zz&api_key=K", "api_key=%zz&api_key=K"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/?"+q, nil))
	}
	if len(*served) != 1 {
		t.Errorf("1 per hour per api_key, and the backend served key K %d times: %v", len(*served), *served)
	}
}

// A rule matching a header value still matches when the field is sent
// twice: a duplicate line must not slip a request past it.
func TestMatchHeaderIgnoresExtraLines(t *testing.T) {
	st, err := memory.New(memory.Config{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := rules.New(rules.Config{Rules: []rules.Rule{{
		Name:     "free",
		Match:    rules.Match{Headers: []rules.HeaderMatch{{Name: "X-Plan", Value: "free"}}},
		Policies: []rules.Policy{{Algorithm: "token_bucket", Rate: "1/h", Burst: 1}},
	}}}, st)
	if err != nil {
		t.Fatal(err)
	}
	h := New(e, Config{}).Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	codes := []int{}
	for range 2 {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Add("X-Plan", "free")
		r.Header.Add("X-Plan", "pro")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		codes = append(codes, w.Code)
	}
	if codes[1] != http.StatusTooManyRequests {
		t.Errorf("codes %v: the second request slipped past the rule", codes)
	}
}

// A delayed request whose context ends first (an outer middleware's
// deadline) is answered 503 with a problem, not an empty 200, and the
// handler is not called.
func TestDelayEndedByContextAnswers503(t *testing.T) {
	st, err := memory.New(memory.Config{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := rules.New(rules.Config{Rules: []rules.Rule{{Name: "shape", Key: rules.Key{"global"},
		Policies: []rules.Policy{{Algorithm: "leaky_bucket", Rate: "1/s", Burst: 5}}}}}, st)
	if err != nil {
		t.Fatal(err)
	}
	called := 0
	inner := New(e, Config{}).Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called++ }))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 20*time.Millisecond)
		defer cancel()
		inner.ServeHTTP(w, r.WithContext(ctx))
	})
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil)) // passes at once
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil)) // delayed 1s, deadline 20ms
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Content-Type") != rules.ContentTypeProblem || called != 1 {
		t.Fatalf("status %d, type %q, handler called %d times: want 503 problem, handler once", w.Code, w.Header().Get("Content-Type"), called)
	}
}

// A nil engine is refused when the limiter is built, not at the first
// request.
func TestNewNilEnginePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New(nil) did not panic")
		}
	}()
	New(nil, Config{})
}

// A path spelled with dot segments or repeated slashes is the path it
// names: a handler or router that serves "//api/x" as "/api/x" (no
// ServeMux redirect in front) must not see it go uncounted by a rule on
// "/api/", as the gateway and forward-auth count it (rules.CleanPath).
func TestUncleanPathsCountAgainstARuleOnTheirPrefix(t *testing.T) {
	st, err := memory.New(memory.Config{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e, err := rules.New(rules.Config{Rules: []rules.Rule{{
		Name: "api", Match: rules.Match{PathPrefixes: []string{"/api/"}},
		Policies: []rules.Policy{{Algorithm: "token_bucket", Rate: "1/h", Burst: 2}},
	}}}, st)
	if err != nil {
		t.Fatal(err)
	}
	served := 0
	h := New(e, Config{}).Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }))
	for _, p := range []string{"/api/x", "//api/x", "/./api/x", "/x/../api/x", "/api/x/..", "/api//x"} {
		r := httptest.NewRequest("GET", "/", nil)
		r.URL.Path = p
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	if served != 2 {
		t.Errorf("a rule on /api/ of 2 per hour served %d of 6 spellings of /api/ paths", served)
	}
}
