package forwardauth

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/tollgate-dev/tollgate/httplimit"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// forwardauth decides as httplimit does: the same header fields read the
// same way (several lines joined: X-Forwarded-For in two lines names the
// client of the same list in one line), the same rate-limit fields, the
// same refusal.
func TestAnswersAsHTTPLimit(t *testing.T) {
	rc := rules.Config{
		ClientIP: rules.ClientIP{TrustedProxies: []string{proxy}},
		Rules: []rules.Rule{{
			Name:     "per-ip",
			Policies: []rules.Policy{{Algorithm: "fixed_window", Limit: 1, Window: "1m"}},
		}},
	}
	fa := newHandler(t, rc, nil, Config{})
	clk := newFakeClock()
	st, err := memory.New(memory.Config{Clock: clk.now, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rc.Now = clk.wall
	e, err := rules.New(rc, st)
	if err != nil {
		t.Fatal(err)
	}
	hl := httplimit.New(e, httplimit.Config{}).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))

	for i, lines := range [][]string{{"198.51.100.1", "203.0.113.7"}, {"198.51.100.1, 203.0.113.7"}} {
		// Both from the trusted proxy: the client is the list's last
		// address, 203.0.113.7, only when its lines are joined.
		direct := httptest.NewRequest(http.MethodGet, "/api/items", nil)
		direct.RemoteAddr = proxy + ":40000"
		auth := httptest.NewRequest(http.MethodGet, "/auth", nil)
		auth.RemoteAddr = proxy + ":40000"
		for k, v := range forwarded("GET", "/api/items", "") {
			auth.Header.Set(k, v)
		}
		auth.Header.Del("X-Forwarded-For")
		for _, l := range lines {
			direct.Header.Add("X-Forwarded-For", l)
			auth.Header.Add("X-Forwarded-For", l)
		}
		got, want := httptest.NewRecorder(), httptest.NewRecorder()
		fa.ServeHTTP(got, auth)
		hl.ServeHTTP(want, direct)
		if i == 0 {
			// Allowed: forwardauth answers 200 itself, with the fields.
			if got.Code != http.StatusOK || want.Code != http.StatusOK {
				t.Fatalf("first request: forwardauth %d, httplimit %d; want 200", got.Code, want.Code)
			}
			for _, f := range []string{"Ratelimit", "Ratelimit-Policy"} {
				if got.Header().Get(f) == "" || got.Header().Get(f) != want.Header().Get(f) {
					t.Errorf("%s: forwardauth %q, httplimit %q", f, got.Header().Get(f), want.Header().Get(f))
				}
			}
			continue
		}
		// The same client in one line: refused by both.
		if got.Code != http.StatusTooManyRequests {
			t.Fatalf("second request: forwardauth %d, want 429", got.Code)
		}
		if got.Code != want.Code || !reflect.DeepEqual(got.Header(), want.Header()) || got.Body.String() != want.Body.String() {
			t.Errorf("refusal:\nforwardauth %d %v %s\nhttplimit   %d %v %s", got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
		}
	}
}
