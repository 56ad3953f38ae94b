package forwardauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

const proxy = "10.0.0.1"

// fakeClock is a settable Unix-ns clock for the store and the engine.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *fakeClock) now() int64      { return c.ns.Load() }
func (c *fakeClock) wall() time.Time { return time.Unix(0, c.ns.Load()) }

// twoPerMinute limits /api/ to 2 requests a minute per client IP, with
// the proxy trusted for the client address.
func twoPerMinute() rules.Config {
	return rules.Config{
		ClientIP: rules.ClientIP{TrustedProxies: []string{proxy}},
		Rules: []rules.Rule{{
			Name:     "api",
			Match:    rules.Match{PathPrefixes: []string{"/api/"}},
			Policies: []rules.Policy{{Algorithm: "fixed_window", Limit: 2, Window: "1m"}},
		}},
	}
}

func newHandler(t *testing.T, rc rules.Config, st limit.Store, cfg Config) *Handler {
	t.Helper()
	clk := newFakeClock()
	if st == nil {
		ms, err := memory.New(memory.Config{Clock: clk.now, SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ms.Close() })
		st = ms
	}
	rc.Now = clk.wall
	e, err := rules.New(rc, st)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TrustedProxies == nil {
		cfg.TrustedProxies = []string{proxy}
	}
	h, err := New(e, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// ask sends one auth request from peer to h at path with the fields.
func ask(h http.Handler, peer, path string, fields map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.RemoteAddr = peer + ":40000"
	for k, v := range fields {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func forwarded(method, uri, client string) map[string]string {
	return map[string]string{"X-Forwarded-Method": method, "X-Forwarded-Uri": uri,
		"X-Forwarded-Host": "api.example", "X-Forwarded-For": client}
}

func nginx(method, uri, client string) map[string]string {
	return map[string]string{"X-Original-Method": method, "X-Original-Uri": uri,
		"X-Forwarded-Host": "api.example", "X-Forwarded-For": client}
}

func TestForwardedStyleAllowsWithFieldsThenRefusesWith429(t *testing.T) {
	h := newHandler(t, twoPerMinute(), nil, Config{})
	for i := range 2 {
		w := ask(h, proxy, "/auth", forwarded("GET", "/api/items?x=1", "203.0.113.7"))
		if w.Code != http.StatusOK {
			t.Fatalf("request %d: status %d, want 200: %s", i+1, w.Code, w.Body)
		}
		if got, want := w.Header().Get("RateLimit"), `"api";r=`+string(rune('1'-i))+";t=60"; got != want {
			t.Errorf("request %d: RateLimit %q, want %q", i+1, got, want)
		}
		if w.Header().Get("RateLimit-Policy") == "" {
			t.Errorf("request %d: no RateLimit-Policy", i+1)
		}
	}
	w := ask(h, proxy, "/auth", forwarded("GET", "/api/items?x=1", "203.0.113.7"))
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("third request: status %d, want 429", w.Code)
	}
	if w.Header().Get("Retry-After") != "60" || w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("refusal fields: %v", w.Header())
	}
	if ct := w.Header().Get("Content-Type"); ct != rules.ContentTypeProblem {
		t.Errorf("Content-Type %q", ct)
	}
	var body struct {
		Status   int      `json:"status"`
		Instance string   `json:"instance"`
		Violated []string `json:"violated-policies"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %q: %v", w.Body, err)
	}
	if body.Status != 429 || body.Instance != "/api/items" || len(body.Violated) != 1 || body.Violated[0] != "api" {
		t.Errorf("body %+v", body)
	}
}

func TestRulesSeeTheOriginalMethodPathQueryAndHost(t *testing.T) {
	rc := rules.Config{
		ClientIP: rules.ClientIP{TrustedProxies: []string{proxy}},
		Rules: []rules.Rule{{
			Name:     "writes",
			Match:    rules.Match{Methods: []string{"POST"}, Hosts: []string{"api.example"}, Paths: []string{"/orders/new"}},
			Key:      rules.Key{"query:api_key"},
			Policies: []rules.Policy{{Algorithm: "fixed_window", Limit: 1, Window: "1m"}},
		}},
	}
	h := newHandler(t, rc, nil, Config{})
	// The auth request's own method, path and host (GET /auth on
	// 127.0.0.1) never match; the original's do, the path decoded.
	f := forwarded("POST", "/orders/%6Eew?api_key=k1", "203.0.113.7")
	if w := ask(h, proxy, "/auth", f); w.Code != 200 || w.Header().Get("RateLimit") == "" {
		t.Fatalf("first POST: %d %v", w.Code, w.Header())
	}
	if w := ask(h, proxy, "/auth", f); w.Code != 429 {
		t.Fatalf("second POST with the same key: %d, want 429", w.Code)
	}
	if w := ask(h, proxy, "/auth", forwarded("POST", "/orders/new?api_key=k2", "203.0.113.7")); w.Code != 200 {
		t.Errorf("another key: %d, want 200", w.Code)
	}
	for _, g := range []map[string]string{
		forwarded("GET", "/orders/new?api_key=k1", "203.0.113.7"),
		forwarded("POST", "/orders/old?api_key=k1", "203.0.113.7"),
		{"X-Forwarded-Method": "POST", "X-Forwarded-Uri": "/orders/new?api_key=k1", "X-Forwarded-Host": "other.example"},
	} {
		if w := ask(h, proxy, "/auth", g); w.Code != 200 || w.Header().Get("RateLimit") != "" {
			t.Errorf("%v: %d %v, want 200 without fields (no rule matches)", g, w.Code, w.Header())
		}
	}
}

func TestClientAddressIsReadFromTheTrustedProxysForwardingField(t *testing.T) {
	h := newHandler(t, twoPerMinute(), nil, Config{})
	for range 2 {
		ask(h, proxy, "/auth", forwarded("GET", "/api/x", "203.0.113.7"))
	}
	if w := ask(h, proxy, "/auth", forwarded("GET", "/api/x", "203.0.113.7")); w.Code != 429 {
		t.Fatalf("client A's third: %d, want 429", w.Code)
	}
	// A client that puts an address before its own gets its own bucket
	// all the same: the walk stops at the first untrusted hop from the
	// right.
	if w := ask(h, proxy, "/auth", forwarded("GET", "/api/x", "203.0.113.7, 198.51.100.2")); w.Code != 200 {
		t.Fatalf("client B: %d, want 200", w.Code)
	}
}

func TestUntrustedPeerIsForbiddenAndChargesNothing(t *testing.T) {
	h := newHandler(t, twoPerMinute(), nil, Config{})
	for range 3 {
		w := ask(h, "192.0.2.9", "/auth", forwarded("GET", "/api/x", "203.0.113.7"))
		if w.Code != http.StatusForbidden || w.Header().Get(HeaderStatus) != "" {
			t.Fatalf("untrusted peer: %d %v, want a plain 403", w.Code, w.Header())
		}
	}
	if w := ask(h, proxy, "/auth", forwarded("GET", "/api/x", "192.0.2.9")); w.Header().Get("RateLimit") != `"api";r=1;t=60` {
		t.Errorf("after the untrusted requests: %v, want the whole allowance", w.Header())
	}
}

func TestZeroConfigTrustsNoProxy(t *testing.T) {
	st, _ := memory.New(memory.Config{})
	defer st.Close()
	e, err := rules.New(twoPerMinute(), st)
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(e, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, peer := range []string{proxy, "127.0.0.1", "::1"} {
		if w := ask(h, peer, "/auth", forwarded("GET", "/api/x", "203.0.113.7")); w.Code != http.StatusForbidden {
			t.Errorf("peer %s: %d, want 403", peer, w.Code)
		}
	}
}

func TestMalformedTrustedProxyIsAnError(t *testing.T) {
	st, _ := memory.New(memory.Config{})
	defer st.Close()
	e, _ := rules.New(rules.Config{}, st)
	if _, err := New(e, Config{TrustedProxies: []string{"10.0.0.0/8", "proxy.local"}}); err == nil || !strings.Contains(err.Error(), "trusted_proxies[1]") {
		t.Fatalf("err = %v, want trusted_proxies[1] named", err)
	}
}

func TestEachStyleReadsOnlyItsOwnFields(t *testing.T) {
	h := newHandler(t, twoPerMinute(), nil, Config{})
	// nginx's path with the forwarded style's fields: a client could
	// have sent them through nginx, so they are not read.
	if w := ask(h, proxy, "/auth/nginx", forwarded("GET", "/api/x", "203.0.113.7")); w.Code != http.StatusBadRequest ||
		!strings.Contains(w.Body.String(), "X-Original-Method") {
		t.Errorf("nginx path, forwarded fields: %d %s, want 400 naming X-Original-Method", w.Code, w.Body)
	}
	if w := ask(h, proxy, "/auth", nginx("GET", "/api/x", "203.0.113.7")); w.Code != http.StatusBadRequest ||
		!strings.Contains(w.Body.String(), "X-Forwarded-Method") {
		t.Errorf("forwarded path, nginx fields: %d %s, want 400 naming X-Forwarded-Method", w.Code, w.Body)
	}
}

func TestNginxStyleRefusesWith403CarryingStatusBodyAndFields(t *testing.T) {
	h := newHandler(t, twoPerMinute(), nil, Config{})
	for range 2 {
		if w := ask(h, proxy, "/auth/nginx", nginx("GET", "/api/x", "203.0.113.7")); w.Code != 200 || w.Header().Get("RateLimit") == "" {
			t.Fatalf("allowed: %d %v", w.Code, w.Header())
		}
	}
	w := ask(h, proxy, "/auth/nginx", nginx("GET", "/api/x", "203.0.113.7"))
	if w.Code != http.StatusForbidden {
		t.Fatalf("refused: %d, want 403 (auth_request passes 401 and 403 only)", w.Code)
	}
	hd := w.Header()
	if hd.Get(HeaderStatus) != "429" || hd.Get("Retry-After") != "60" || hd.Get("RateLimit") != `"api";r=0;t=60` {
		t.Errorf("fields: %v", hd)
	}
	var body struct {
		Status   int    `json:"status"`
		Instance string `json:"instance"`
	}
	if err := json.Unmarshal([]byte(hd.Get(HeaderRefusal)), &body); err != nil || body.Status != 429 || body.Instance != "/api/x" {
		t.Errorf("%s %q: %+v %v", HeaderRefusal, hd.Get(HeaderRefusal), body, err)
	}
}

func TestNginxStyleLeavesOutARefusalBodyTooLongForAField(t *testing.T) {
	h := newHandler(t, twoPerMinute(), nil, Config{})
	long := "/api/" + strings.Repeat("a", 2*maxRefusalField)
	for range 2 {
		ask(h, proxy, "/auth/nginx", nginx("GET", long, "203.0.113.7"))
	}
	w := ask(h, proxy, "/auth/nginx", nginx("GET", long, "203.0.113.7"))
	if w.Code != 403 || w.Header().Get(HeaderStatus) != "429" {
		t.Fatalf("%d %v", w.Code, w.Header())
	}
	if _, ok := w.Header()[HeaderRefusal]; ok {
		t.Errorf("%s sent for a %d-byte path", HeaderRefusal, len(long))
	}
}

// failingStore fails every decision, as a store whose backend is down.
type failingStore struct{}

var errDown = errors.New("store down")

func (failingStore) Apply(context.Context, string, limit.Policy, int64) (limit.Decision, error) {
	return limit.Decision{}, errDown
}

func (failingStore) ApplyAll(context.Context, []limit.Request) (limit.Decision, error) {
	return limit.Decision{}, errDown
}

func TestStoreFailureFollowsTheEnginesFailureMode(t *testing.T) {
	rc := twoPerMinute()
	h := newHandler(t, rc, failingStore{}, Config{})
	if w := ask(h, proxy, "/auth", forwarded("GET", "/api/x", "203.0.113.7")); w.Code != 200 {
		t.Errorf("fail open (default): %d, want 200", w.Code)
	}
	rc.OnError = failmode.Closed
	h = newHandler(t, rc, failingStore{}, Config{})
	if w := ask(h, proxy, "/auth", forwarded("GET", "/api/x", "203.0.113.7")); w.Code != 503 {
		t.Errorf("fail closed, forwarded style: %d, want 503", w.Code)
	}
	if w := ask(h, proxy, "/auth/nginx", nginx("GET", "/api/x", "203.0.113.7")); w.Code != 403 || w.Header().Get(HeaderStatus) != "503" {
		t.Errorf("fail closed, nginx style: %d %v, want 403 with %s: 503", w.Code, w.Header(), HeaderStatus)
	}
}

func TestDelayedRequestIsAnsweredAfterItsDelay(t *testing.T) {
	rc := rules.Config{
		ClientIP: rules.ClientIP{TrustedProxies: []string{proxy}},
		Rules:    []rules.Rule{{Name: "shape", Policies: []rules.Policy{{Algorithm: "leaky_bucket", Rate: "1/s", Burst: 5}}}},
	}
	var waited []time.Duration
	wait := func(ctx context.Context, d time.Duration) error { waited = append(waited, d); return nil }
	h := newHandler(t, rc, nil, Config{Wait: wait})
	for range 2 {
		if w := ask(h, proxy, "/auth", forwarded("GET", "/", "203.0.113.7")); w.Code != 200 {
			t.Fatalf("status %d", w.Code)
		}
	}
	if len(waited) != 1 || waited[0] != time.Second {
		t.Errorf("waits %v, want [1s] (the second request of a 1/s bucket)", waited)
	}
	cancelled := func(ctx context.Context, d time.Duration) error { return context.Canceled }
	h = newHandler(t, rc, nil, Config{Wait: cancelled})
	ask(h, proxy, "/auth", forwarded("GET", "/", "203.0.113.7"))
	if w := ask(h, proxy, "/auth", forwarded("GET", "/", "203.0.113.7")); w.Code != 503 {
		t.Errorf("wait cancelled: %d, want 503", w.Code)
	}
}

func TestMalformedForwardedFieldsAre400(t *testing.T) {
	h := newHandler(t, twoPerMinute(), nil, Config{})
	for _, tc := range []struct {
		name   string
		fields map[string]string
		field  string
	}{
		{"no method", map[string]string{"X-Forwarded-Uri": "/api/x"}, "X-Forwarded-Method"},
		{"no uri", map[string]string{"X-Forwarded-Method": "GET"}, "X-Forwarded-Uri"},
		{"method not a token", forwarded("GE(T", "/api/x", "203.0.113.7"), "X-Forwarded-Method"},
		{"relative uri", forwarded("GET", "api/x", "203.0.113.7"), "X-Forwarded-Uri"},
		{"control character", forwarded("GET", "/api/\x01", "203.0.113.7"), "X-Forwarded-Uri"},
		{"odd scheme", forwarded("GET", "ftp://h/api/x", "203.0.113.7"), "X-Forwarded-Uri"},
		{"bad host", map[string]string{"X-Forwarded-Method": "GET", "X-Forwarded-Uri": "/api/x", "X-Forwarded-Host": "a b"}, "X-Forwarded-Host"},
	} {
		w := ask(h, proxy, "/auth", tc.fields)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), tc.field) {
			t.Errorf("%s: %d %s, want 400 naming %s", tc.name, w.Code, w.Body, tc.field)
		}
	}
}

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		in, path, query string
		err             bool
	}{
		{in: "/", path: "/"},
		{in: "/a/b?c=d&e", path: "/a/b", query: "c=d&e"},
		{in: "/a%20b/%2F?q=%20", path: "/a b/", query: "q=%20"},
		{in: "/bad%zz", path: "/bad%zz"},
		{in: "/bad%zz/..%2Fapi/x%4", path: "/api/x%4"},
		{in: "//api/x", path: "/api/x"},
		{in: "/./api/x?a=/../b", path: "/api/x", query: "a=/../b"},
		{in: "/x/../api/x", path: "/api/x"},
		{in: "/%2e/api/x", path: "/api/x"},
		{in: "/x/%2E%2e/api/x", path: "/api/x"},
		{in: "/api%2Fx", path: "/api/x"},
		{in: "http://h.example//api/../api/x", path: "/api/x"},
		{in: "/a#frag", path: "/a"},
		{in: "*", path: "*"},
		{in: "http://h.example/p?q", path: "/p", query: "q"},
		{in: "HTTPS://h.example", path: "/"},
		{in: "https://h.example?q", path: "/", query: "q"},
		{in: "", err: true},
		{in: "p", err: true},
		{in: "/a b", err: true},
		{in: "/a\x7f", err: true},
		{in: "mailto://x/y", err: true},
	} {
		path, query, err := parseTarget(tc.in)
		if (err != nil) != tc.err || err == nil && (path != tc.path || query != tc.query) {
			t.Errorf("parseTarget(%q) = %q, %q, %v; want %q, %q, error %v", tc.in, path, query, err, tc.path, tc.query, tc.err)
		}
	}
}

// The answers forward-auth writes itself (a peer not trusted, a request
// that cannot be decided on) are problem+json with nosniff and no-store,
// written by httplimit.WriteProblem as the gateway's are.
func TestProblemsSendNosniff(t *testing.T) {
	st, _ := memory.New(memory.Config{})
	e, err := rules.New(rules.Config{}, st)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		trusted []string
		want    int
	}{
		{"untrusted peer", nil, http.StatusForbidden},
		{"no forwarded fields", []string{"192.0.2.1"}, http.StatusBadRequest},
	} {
		h, err := New(e, Config{TrustedProxies: c.trusted})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodGet, "/auth", nil)
		req.RemoteAddr = "192.0.2.1:1234"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		hd := w.Result().Header
		if w.Code != c.want || hd.Get("X-Content-Type-Options") != "nosniff" || hd.Get("Content-Type") != rules.ContentTypeProblem ||
			hd.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d %v; want %d, nosniff, problem+json, no-store", c.name, w.Code, hd, c.want)
		}
	}
}
