package httplimit

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/httpbench"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// countingEngine is one rule counting answers of statuses, 2 per hour
// per client IP.
func countingEngine(t *testing.T, statuses ...string) *rules.Engine {
	t.Helper()
	st, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e, err := rules.New(rules.Config{Rules: []rules.Rule{{
		Name:     "failed",
		Count:    &rules.Count{Statuses: statuses},
		Policies: []rules.Policy{{Algorithm: "fixed_window", Limit: 2, Window: "1h"}},
	}}}, st)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// serveOnce sends a request from 192.0.2.1 through h and returns the
// answer's status.
func serveOnce(h http.Handler) int {
	r := httptest.NewRequest(http.MethodPost, "/login", nil)
	r.RemoteAddr = "192.0.2.1:4711"
	w := httptest.NewRecorder()
	func() {
		defer func() { recover() }() //nolint:errcheck // a panicking handler's panic, as net/http's server recovers it
		h.ServeHTTP(w, r)
	}()
	return w.Code
}

// The middleware charges a counting rule with the status the handler
// writes: 401s use the allowance up and the key is refused; 200s, which
// the rule does not count, never are.
func TestMiddlewareChargesTheAnswer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		counted bool
	}{
		{"WriteHeader 401", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) }, true},
		{"http.Error 401", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusUnauthorized) }, true},
		{"Write, no status (200)", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }, false},
		{"nothing written (200)", func(http.ResponseWriter, *http.Request) {}, false},
		{"103 then 401", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusUnauthorized)
		}, true},
		{"403, not counted", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusForbidden) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := New(countingEngine(t, "401"), Config{}).Handler(tc.handler)
			var codes []int
			for range 4 {
				codes = append(codes, serveOnce(h))
			}
			refused := codes[2] == http.StatusTooManyRequests && codes[3] == http.StatusTooManyRequests
			if tc.counted != refused || codes[0] == http.StatusTooManyRequests || codes[1] == http.StatusTooManyRequests {
				t.Fatalf("answers %v; counted %v: want the third and fourth refused exactly when counted", codes, tc.counted)
			}
		})
	}
}

// A handler that panics before writing is charged as 500 (the panic goes
// on to the server); one counted by 5xx is then refused.
func TestMiddlewareChargesAPanicAs500(t *testing.T) {
	h := New(countingEngine(t, "5xx"), Config{}).Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("boom")
	}))
	var panicked any
	for i := range 3 {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = "192.0.2.1:4711"
		w := httptest.NewRecorder()
		func() {
			defer func() { panicked = recover() }()
			h.ServeHTTP(w, r)
		}()
		if i < 2 && panicked != "boom" {
			t.Fatalf("request %d: recovered %v; want the handler's panic to go on", i+1, panicked)
		}
		if i == 2 && (panicked != nil || w.Code != http.StatusTooManyRequests) {
			t.Fatalf("third request: %d, panic %v; want 429: the two panics were charged as 500", w.Code, panicked)
		}
	}
}

// The counting writer keeps what handlers reach for: http.Flusher,
// http.Hijacker, and http.ResponseController's deadlines through Unwrap,
// on a real server.
func TestCountingWriterKeepsFlusherHijackerController(t *testing.T) {
	var flusher, deadline bool
	h := New(countingEngine(t, "401", "101"), Config{}).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hijack" {
			c, brw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("Hijack: %v", err)
				return
			}
			brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n")
			brw.Flush()
			c.Close()
			return
		}
		deadline = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Second)) == nil
		w.WriteHeader(http.StatusUnauthorized)
		f, ok := w.(http.Flusher)
		flusher = ok
		if ok {
			f.Flush()
		}
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !flusher || !deadline {
		t.Fatalf("status %d, Flusher %v, SetWriteDeadline %v; want 401, true, true", resp.StatusCode, flusher, deadline)
	}
	// The hijacked exchange is charged as 101: the second charge (the
	// 401 was the first) uses the allowance up.
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /hijack HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: x\r\n\r\n")
	line, _ := bufio.NewReader(c).ReadString('\n')
	if line != "HTTP/1.1 101 Switching Protocols\r\n" {
		t.Fatalf("hijacked answer %q", line)
	}
	resp, err = srv.Client().Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("after a 401 and a hijack: %d; want 429 (both charged)", resp.StatusCode)
	}
}

// The counting path stays cheap: with a counting rule the middleware
// adds at most the writer and the charge's own allocations, and without
// one none (TestMiddlewareAllocs).
func TestCountingMiddlewareAllocs(t *testing.T) {
	st, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := rules.New(rules.Config{Rules: []rules.Rule{{Name: "failed", Count: &rules.Count{Statuses: []string{"401"}},
		Policies: []rules.Policy{{Rate: "1000000000/s"}}}}}, st)
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
	t.Logf("bare %v allocs, counting %v allocs", base, lim)
	if lim-base > 5 {
		t.Fatalf("counting middleware adds %v allocs, budget 5 (the writer, the headers)", lim-base)
	}
}

// A request a counting rule admitted that is never served (its delay,
// by a shaping rule of the same request, left by its client) ends its
// counting reservation: the key's last place is not kept from the next
// request.
func TestMiddlewareEndsTheReservationOfARequestNeverServed(t *testing.T) {
	st, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e, err := rules.New(rules.Config{Rules: []rules.Rule{
		{Name: "shape", Key: rules.Key{"header:X-Shape"}, MaxDelay: time.Minute,
			Policies: []rules.Policy{{Algorithm: "leaky_bucket", Rate: "1/30s", Burst: 5}}},
		{Name: "failed", Count: &rules.Count{Statuses: []string{"401"}},
			Policies: []rules.Policy{{Algorithm: "fixed_window", Limit: 1, Window: "1h"}}},
	}}, st)
	if err != nil {
		t.Fatal(err)
	}
	served := 0
	h := New(e, Config{}).Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }))
	send := func(shape bool, cancelAfter time.Duration) int {
		r := httptest.NewRequest(http.MethodPost, "/login", nil)
		r.RemoteAddr = "192.0.2.1:4711"
		if shape {
			r.Header.Set("X-Shape", "1")
		}
		if cancelAfter > 0 {
			ctx, cancel := context.WithTimeout(r.Context(), cancelAfter)
			defer cancel()
			r = r.WithContext(ctx)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if code := send(true, 0); code != http.StatusOK {
		t.Fatalf("first: %d", code)
	}
	// Delayed about 30s by the shaping rule, holding the counting
	// rule's only place; its client leaves after 50ms.
	t0 := time.Now()
	send(true, 50*time.Millisecond)
	if time.Since(t0) < 50*time.Millisecond {
		t.Fatal("the second request was not delayed")
	}
	if served != 1 {
		t.Fatalf("the delayed request was served (%d served)", served)
	}
	if code := send(false, 0); code != http.StatusOK || served != 2 {
		t.Fatalf("after a request never served: %d (%d served); want the place it reserved back", code, served)
	}
}
