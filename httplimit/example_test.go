package httplimit_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/go-chi/chi/v5"
	"github.com/tollgate-dev/tollgate/httplimit"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// Example limits every client IP to 2 requests a minute in front of a
// plain net/http mux, and shows the headers and the refusal.
func Example() {
	// A fixed clock keeps the output exact: on the wall clock, a run
	// across a minute boundary would start a new window midway.
	store, err := memory.New(memory.Config{Clock: func() int64 { return 1_700_000_000e9 }})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	engine, err := rules.New(rules.Config{
		Rules: []rules.Rule{{
			Name:     "per-ip",
			Policies: []rules.Policy{{Algorithm: "sliding_window", Limit: 2, Window: "1m"}},
		}},
	}, store)
	if err != nil {
		log.Fatal(err)
	}
	limiter := httplimit.New(engine, httplimit.Config{})

	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello\n")
	})
	srv := httptest.NewServer(limiter.Handler(mux))
	defer srv.Close()

	for i := 0; i < 3; i++ {
		resp, err := http.Get(srv.URL + "/hello")
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("RateLimit-Policy"), resp.Header.Get("Content-Type"))
	}
	// Output:
	// 200 "per-ip";q=2;w=60 text/plain; charset=utf-8
	// 200 "per-ip";q=2;w=60 text/plain; charset=utf-8
	// 429 "per-ip";q=2;w=60 application/problem+json
}

// Example_chi uses the limiter as chi middleware: a global per-IP rule,
// and a stricter one for a login route, applied as one decision.
func Example_chi() {
	// A fixed clock keeps the output exact: on the wall clock, a run
	// across a minute boundary would start a new window midway.
	store, err := memory.New(memory.Config{Clock: func() int64 { return 1_700_000_000e9 }})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	engine, err := rules.New(rules.Config{
		Rules: []rules.Rule{
			{
				Name:     "per-ip",
				Policies: []rules.Policy{{Rate: "100/s"}},
			},
			{
				Name:     "login",
				Match:    rules.Match{Patterns: []string{"POST /login"}},
				Policies: []rules.Policy{{Algorithm: "fixed_window", Limit: 1, Window: "1m"}},
			},
		},
	}, store)
	if err != nil {
		log.Fatal(err)
	}
	limiter := httplimit.New(engine, httplimit.Config{})

	r := chi.NewRouter()
	r.Use(limiter.Handler)
	r.Post("/login", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "welcome\n") })
	srv := httptest.NewServer(r)
	defer srv.Close()

	for i := 0; i < 2; i++ {
		resp, err := http.Post(srv.URL+"/login", "text/plain", nil)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("Retry-After") != "", len(body) > 0)
	}
	// Output:
	// 200 false true
	// 429 true true
}
