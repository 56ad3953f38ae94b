package rules

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestPatternsAgreeWithServeMux checks the engine's patterns against
// net/http.ServeMux itself: for every pattern and request, the engine
// matches exactly when a mux holding only that pattern serves it.
func TestPatternsAgreeWithServeMux(t *testing.T) {
	patterns := []string{
		"/",
		"/{$}",
		"/items",
		"/items/",
		"/items/{$}",
		"/items/{id}",
		"/items/{id}/",
		"/items/{id}/edit",
		"/files/{path...}",
		"GET /items/{id}",
		"POST /items/",
		"api.example.com/",
		"GET api.example.com/search",
		"/a/{x}/b/{y}",
	}
	requests := []struct{ method, host, path string }{
		{"GET", "api.example.com", "/"},
		{"GET", "api.example.com", "/items"},
		{"GET", "api.example.com", "/items/"},
		{"GET", "api.example.com", "/items/42"},
		{"HEAD", "api.example.com", "/items/42"},
		{"POST", "api.example.com", "/items/42"},
		{"GET", "api.example.com", "/items/42/"},
		{"GET", "api.example.com", "/items/42/edit"},
		{"GET", "api.example.com", "/items/42/edit/x"},
		{"GET", "api.example.com", "/files/"},
		{"GET", "api.example.com", "/files/a/b/c.txt"},
		{"GET", "other.example.com", "/search"},
		{"GET", "api.example.com", "/search"},
		{"POST", "api.example.com", "/search"},
		{"GET", "api.example.com", "/a/1/b/2"},
		{"GET", "api.example.com", "/a/1/b/2/3"},
		{"GET", "api.example.com", "/a/1/c/2"},
	}
	for _, pat := range patterns {
		p, err := parsePattern(pat)
		if err != nil {
			t.Fatalf("%q: %v", pat, err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc(pat, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(299) })
		for _, rq := range requests {
			hr := httptest.NewRequest(rq.method, "http://"+rq.host+rq.path, nil)
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, hr)
			muxMatch := rec.Code == 299
			if rec.Code == http.StatusMovedPermanently || rec.Code == http.StatusTemporaryRedirect {
				continue // the mux redirects to the slash form; no verdict
			}
			if got := p.matches(rq.method, rq.host, rq.path); got != muxMatch {
				t.Errorf("pattern %q, %s %s%s: engine %v, ServeMux %v", pat, rq.method, rq.host, rq.path, got, muxMatch)
			}
		}
	}
}

func TestPatternErrors(t *testing.T) {
	for _, s := range []string{"", "items", "/a/{x", "/a/{x}{y}", "/a/{x...}/b", "/a/{$}/b", "/{x}/{x}", "/a/{1x}", "{h}.com/", "G@T /"} {
		if _, err := parsePattern(s); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		name string
		m    Match
		r    *req
		want bool
	}{
		{"zero matches all", Match{}, get("/x", "192.0.2.1"), true},
		{"method", Match{Methods: []string{"POST", "PUT"}}, get("/x", "192.0.2.1"), false},
		{"method ok", Match{Methods: []string{"GET"}}, get("/x", "192.0.2.1"), true},
		{"host exact case-insensitive with port", Match{Hosts: []string{"API.example.com"}}, &req{method: "GET", host: "api.EXAMPLE.com:8443", path: "/"}, true},
		{"host other", Match{Hosts: []string{"www.example.com"}}, get("/", "192.0.2.1"), false},
		{"host wildcard", Match{Hosts: []string{"*.example.com"}}, get("/", "192.0.2.1"), true},
		{"host wildcard excludes apex", Match{Hosts: []string{"*.example.com"}}, &req{method: "GET", host: "example.com", path: "/"}, false},
		{"host v6 literal", Match{Hosts: []string{"::1"}}, &req{method: "GET", host: "[::1]:80", path: "/"}, true},
		{"host fully qualified, trailing dot", Match{Hosts: []string{"api.example.com"}}, &req{method: "GET", host: "api.example.com.", path: "/"}, true},
		{"host trailing dot and port", Match{Hosts: []string{"*.example.com"}}, &req{method: "GET", host: "api.example.com.:443", path: "/"}, true},
		{"configured host with a trailing dot", Match{Hosts: []string{"api.example.com."}}, &req{method: "GET", host: "api.example.com.", path: "/"}, true},
		{"configured host with a trailing dot, request without", Match{Hosts: []string{"*.example.com."}}, &req{method: "GET", host: "api.example.com", path: "/"}, true},
		{"path exact", Match{Paths: []string{"/login"}}, get("/login", "192.0.2.1"), true},
		{"path exact no prefix", Match{Paths: []string{"/login"}}, get("/login/x", "192.0.2.1"), false},
		{"prefix", Match{PathPrefixes: []string{"/api/"}}, get("/api/v1", "192.0.2.1"), true},
		{"prefix miss", Match{PathPrefixes: []string{"/api/"}}, get("/apix", "192.0.2.1"), false},
		{"pattern", Match{Patterns: []string{"GET /items/{id}"}}, get("/items/7", "192.0.2.1"), true},
		{"header present", Match{Headers: []HeaderMatch{{Name: "x-api-key"}}}, get("/", "192.0.2.1").with("X-Api-Key", "k"), true},
		{"header absent", Match{Headers: []HeaderMatch{{Name: "x-api-key"}}}, get("/", "192.0.2.1"), false},
		{"header empty is absent", Match{Headers: []HeaderMatch{{Name: "x-api-key"}}}, get("/", "192.0.2.1").with("X-Api-Key", ""), false},
		{"header value", Match{Headers: []HeaderMatch{{Name: "X-Plan", Value: "free"}}}, get("/", "192.0.2.1").with("X-Plan", "free"), true},
		{"header value differs", Match{Headers: []HeaderMatch{{Name: "X-Plan", Value: "free"}}}, get("/", "192.0.2.1").with("X-Plan", "pro"), false},
		{"all fields AND", Match{Methods: []string{"GET"}, PathPrefixes: []string{"/api/"}}, get("/web", "192.0.2.1"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ps problems
			m := compileMatch(tt.m, "match", &ps)
			if len(ps) > 0 {
				t.Fatal(ps)
			}
			if tt.r.header == nil {
				tt.r.header = map[string]string{}
			}
			d := decision{e: &Engine{}, req: tt.r, method: tt.r.method, host: HostOnly(tt.r.host), path: tt.r.path}
			if got := m.match(&d); got != tt.want {
				t.Fatalf("match %v, want %v", got, tt.want)
			}
		})
	}
}
