package client

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// reply is one scripted response.
type reply struct {
	status int
	header http.Header
	body   string
	hangup bool // close the connection without answering
}

// script is a server that answers from a list of replies, then 200s, and
// records what it was sent and when (by the test's clock).
type script struct {
	t       *testing.T
	clock   *fakeClock
	mu      sync.Mutex
	replies []reply
	bodies  []string
	at      []time.Time
	conns   atomic.Int64
	srv     *httptest.Server
}

func newScript(t *testing.T, clock *fakeClock, replies ...reply) *script {
	s := &script{t: t, clock: clock, replies: replies}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.srv.Start()
	t.Cleanup(s.srv.Close)
	return s
}

func (s *script) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(b))
	s.at = append(s.at, s.clock.Now())
	rep := reply{status: http.StatusOK, body: "ok"}
	if len(s.replies) > 0 {
		rep, s.replies = s.replies[0], s.replies[1:]
	}
	s.mu.Unlock()
	if rep.hangup {
		hj, _ := w.(http.Hijacker)
		c, _, _ := hj.Hijack()
		c.Close()
		return
	}
	for k, v := range rep.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rep.status)
	io.WriteString(w, rep.body)
}

func (s *script) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

func h(kv ...string) http.Header {
	out := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		out.Add(kv[i], kv[i+1])
	}
	return out
}

func mustClient(t testing.TB, cfg Config) *http.Client {
	t.Helper()
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestRetryAfterSecondsHonoured(t *testing.T) {
	clock := newFakeClock()
	s := newScript(t, clock,
		reply{status: 429, header: h("Retry-After", "3"), body: strings.Repeat("x", 10000)},
		reply{status: 503, header: h("Retry-After", "1")},
	)
	resp, body := get(t, mustClient(t, clock.config()), s.srv.URL)
	if resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	if got, want := clock.Sleeps(), []time.Duration{3 * time.Second, time.Second}; !slices.Equal(got, want) {
		t.Errorf("slept %v, want %v", got, want)
	}
	if s.requests() != 3 {
		t.Errorf("server saw %d requests, want 3", s.requests())
	}
	// Refused bodies were drained, so one connection served all three.
	if n := s.conns.Load(); n != 1 {
		t.Errorf("%d connections opened, want 1 (bodies of retried responses not drained?)", n)
	}
}

func TestRetryAfterHTTPDateForms(t *testing.T) {
	for _, layout := range []string{
		http.TimeFormat,                  // IMF-fixdate
		"Monday, 02-Jan-06 15:04:05 GMT", // RFC 850
		"Mon Jan _2 15:04:05 2006",       // asctime
	} {
		clock := newFakeClock()
		date := clock.Now().Add(42 * time.Second).UTC().Format(layout)
		s := newScript(t, clock, reply{status: 429, header: h("Retry-After", date)})
		resp, _ := get(t, mustClient(t, clock.config()), s.srv.URL)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d", layout, resp.StatusCode)
		}
		if got := clock.Sleeps(); !slices.Equal(got, []time.Duration{42 * time.Second}) {
			t.Errorf("%q: slept %v, want [42s]", date, got)
		}
	}
}

func TestRetryAfterJitterIsAFloor(t *testing.T) {
	clock := newFakeClock()
	cfg := clock.config()
	cfg.Rand, cfg.RetryJitter = rndMax, 500*time.Millisecond
	s := newScript(t, clock, reply{status: 429, header: h("Retry-After", "2")})
	get(t, mustClient(t, cfg), s.srv.URL)
	if got := clock.Sleeps(); !slices.Equal(got, []time.Duration{2*time.Second + 500*time.Millisecond - 1}) {
		t.Errorf("slept %v, want 2s plus just under 500ms of jitter", got)
	}
}

func TestBackoffWithoutRetryAfter(t *testing.T) {
	clock := newFakeClock()
	cfg := clock.config()
	cfg.Rand = rndMax // full jitter at its largest draw: just under base·2^n
	cfg.BaseDelay, cfg.MaxDelay = 100*time.Millisecond, 300*time.Millisecond
	s := newScript(t, clock, reply{status: 429}, reply{status: 503}, reply{status: 502}, reply{status: 504, header: h("Retry-After", "junk")})
	resp, _ := get(t, mustClient(t, cfg), s.srv.URL)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	want := []time.Duration{100*time.Millisecond - 1, 200*time.Millisecond - 1, 300*time.Millisecond - 1, 300*time.Millisecond - 1}
	if got := clock.Sleeps(); !slices.Equal(got, want) {
		t.Errorf("slept %v, want %v", got, want)
	}
}

func TestAttemptsExhaustedReturnsLastResponse(t *testing.T) {
	clock := newFakeClock()
	cfg := clock.config()
	cfg.MaxAttempts = 3
	s := newScript(t, clock,
		reply{status: 429, header: h("Retry-After", "1")},
		reply{status: 429, header: h("Retry-After", "1")},
		reply{status: 429, header: h("Retry-After", "1"), body: "slow down"},
	)
	resp, body := get(t, mustClient(t, cfg), s.srv.URL)
	if resp.StatusCode != 429 || body != "slow down" {
		t.Errorf("got %d %q, want the last 429 with its body intact", resp.StatusCode, body)
	}
	if s.requests() != 3 {
		t.Errorf("server saw %d requests, want 3", s.requests())
	}
}

func TestRetryAfterBeyondMaxWaitReturnsResponse(t *testing.T) {
	clock := newFakeClock()
	cfg := clock.config()
	cfg.MaxWait = 10 * time.Second
	s := newScript(t, clock, reply{status: 429, header: h("Retry-After", "3600"), body: "come back later"})
	c := mustClient(t, cfg)
	resp, body := get(t, c, s.srv.URL)
	if resp.StatusCode != 429 || body != "come back later" {
		t.Errorf("got %d %q", resp.StatusCode, body)
	}
	if len(clock.Sleeps()) != 0 {
		t.Errorf("slept %v", clock.Sleeps())
	}
	// The host stays on hold: the next request fails at once, unsent.
	_, err := c.Get(s.srv.URL)
	var werr *WaitError
	if !errors.As(err, &werr) || !errors.Is(err, ErrWaitTooLong) || werr.Wait != time.Hour || !werr.FromServer {
		t.Fatalf("second request: %v, want a WaitError of 1h wrapping ErrWaitTooLong", err)
	}
	if s.requests() != 1 {
		t.Errorf("server saw %d requests, want 1", s.requests())
	}
}

func TestDeadlineReturnsAtOnceWithRetryAfter(t *testing.T) {
	clock := newFakeClock()
	s := newScript(t, clock, reply{status: 429, header: h("Retry-After", "30")})
	c := mustClient(t, clock.config())
	ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(5*time.Second))
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.srv.URL, nil)
	start := time.Now()
	_, err := c.Do(req)
	if time.Since(start) > 2*time.Second {
		t.Errorf("took %v: did not return at once", time.Since(start))
	}
	var werr *WaitError
	if !errors.As(err, &werr) {
		t.Fatalf("err = %v, want a *WaitError", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || werr.Wait != 30*time.Second || !werr.FromServer || werr.StatusCode != 429 || werr.Attempts != 1 {
		t.Errorf("WaitError = %+v", werr)
	}
	if len(clock.Sleeps()) != 0 || s.requests() != 1 {
		t.Errorf("slept %v, %d requests", clock.Sleeps(), s.requests())
	}
}

func TestPacingWaitsForReset(t *testing.T) {
	clock := newFakeClock()
	s := newScript(t, clock,
		reply{status: 200, header: h("RateLimit", `"default";r=0;t=4`, "RateLimit-Policy", `"default";q=10;w=60`)},
	)
	c := mustClient(t, clock.config())
	t0 := clock.Now()
	get(t, c, s.srv.URL)
	get(t, c, s.srv.URL)
	if got := clock.Sleeps(); !slices.Equal(got, []time.Duration{4 * time.Second}) {
		t.Errorf("slept %v, want [4s]", got)
	}
	if s.at[1].Sub(t0) != 4*time.Second {
		t.Errorf("second request sent %v after the first, want 4s", s.at[1].Sub(t0))
	}
	// Another host is not held.
	other := newScript(t, clock)
	get(t, c, other.srv.URL)
	if n := len(clock.Sleeps()); n != 1 {
		t.Errorf("a request to another host waited")
	}
}

func TestPacingFromEachHeaderFamily(t *testing.T) {
	for _, hd := range []http.Header{
		h("RateLimit", `"p";r=0`, "RateLimit-Policy", `"p";q=5;w=2`),
		h("RateLimit", "limit=5, remaining=0, reset=2"),
		h("RateLimit-Remaining", "0", "RateLimit-Reset", "2"),
		h("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "2"),
	} {
		clock := newFakeClock()
		hd := hd
		if hd.Get("X-Ratelimit-Reset") != "" { // the epoch form, GitHub's
			hd = h("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", itoa(clock.Now().Unix()+2))
		}
		s := newScript(t, clock, reply{status: 200, header: hd})
		c := mustClient(t, clock.config())
		get(t, c, s.srv.URL)
		get(t, c, s.srv.URL)
		if got := clock.Sleeps(); !slices.Equal(got, []time.Duration{2 * time.Second}) {
			t.Errorf("%v: slept %v, want [2s]", hd, got)
		}
	}
}

func TestMalformedHeadersIgnored(t *testing.T) {
	clock := newFakeClock()
	s := newScript(t, clock,
		reply{status: 200, header: h("RateLimit", `"default";r=0;t=soon`, "X-RateLimit-Remaining", "none", "RateLimit-Remaining", "0.0")},
		reply{status: 429, header: h("Retry-After", "1.5")},
	)
	cfg := clock.config()
	cfg.Rand = rndMax
	c := mustClient(t, cfg)
	get(t, c, s.srv.URL)
	get(t, c, s.srv.URL)
	// No pacing from the malformed fields; the malformed Retry-After falls
	// back to backoff (just under BaseDelay).
	if got := clock.Sleeps(); !slices.Equal(got, []time.Duration{DefaultBaseDelay - 1}) {
		t.Errorf("slept %v", got)
	}
}

func TestRetryAfterTakesPrecedenceOverRateLimit(t *testing.T) {
	clock := newFakeClock()
	s := newScript(t, clock, reply{status: 429, header: h("Retry-After", "2", "RateLimit", `"default";r=0;t=30`)})
	c := mustClient(t, clock.config())
	get(t, c, s.srv.URL)
	if got := clock.Sleeps(); !slices.Equal(got, []time.Duration{2 * time.Second}) {
		t.Errorf("slept %v, want [2s]", got)
	}
}

func TestCachedResponseIgnored(t *testing.T) {
	clock := newFakeClock()
	s := newScript(t, clock, reply{status: 200, header: h("Age", "30", "RateLimit", `"default";r=0;t=30`)})
	c := mustClient(t, clock.config())
	get(t, c, s.srv.URL)
	get(t, c, s.srv.URL)
	if len(clock.Sleeps()) != 0 {
		t.Errorf("paced by a cached response: slept %v", clock.Sleeps())
	}
}

func TestPacingDeadline(t *testing.T) {
	clock := newFakeClock()
	s := newScript(t, clock, reply{status: 200, header: h("RateLimit", `"default";r=0;t=20`)})
	c := mustClient(t, clock.config())
	get(t, c, s.srv.URL)
	ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(time.Second))
	defer cancel()
	body := &closeRecorder{Reader: strings.NewReader("payload")}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, s.srv.URL, body)
	_, err := c.Do(req)
	var werr *WaitError
	if !errors.As(err, &werr) || !errors.Is(err, context.DeadlineExceeded) || werr.Wait != 20*time.Second || werr.Attempts != 0 {
		t.Fatalf("err = %v, want WaitError of 20s before any attempt", err)
	}
	if !body.closed.Load() {
		t.Error("the body of a request never sent was not closed")
	}
	if s.requests() != 1 {
		t.Errorf("server saw %d requests, want 1", s.requests())
	}
}

type closeRecorder struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeRecorder) Close() error { c.closed.Store(true); return nil }

func TestReplayRules(t *testing.T) {
	for _, tc := range []struct {
		name     string
		method   string
		body     func() io.Reader
		header   http.Header
		status   int
		hangup   bool
		requests int
	}{
		{"POST with GetBody retried on 429", http.MethodPost, func() io.Reader { return strings.NewReader("pay") }, nil, 429, false, 2},
		{"POST with GetBody retried on 503", http.MethodPost, func() io.Reader { return strings.NewReader("pay") }, nil, 503, false, 2},
		{"POST not retried on 502", http.MethodPost, func() io.Reader { return strings.NewReader("pay") }, nil, 502, false, 1},
		{"PUT retried on 502", http.MethodPut, func() io.Reader { return strings.NewReader("pay") }, nil, 502, false, 2},
		{"POST with idempotency key retried on 504", http.MethodPost, func() io.Reader { return strings.NewReader("pay") }, h("Idempotency-Key", "k1"), 504, false, 2},
		{"unrewindable body not retried", http.MethodPut, func() io.Reader { return io.MultiReader(strings.NewReader("pay")) }, nil, 429, false, 1},
		{"GET retried after transport error", http.MethodGet, nil, nil, 0, true, 2},
		{"POST not retried after transport error", http.MethodPost, func() io.Reader { return strings.NewReader("pay") }, nil, 0, true, 1},
		{"404 not retried", http.MethodGet, nil, nil, 404, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			s := newScript(t, clock, reply{status: tc.status, hangup: tc.hangup})
			var body io.Reader
			if tc.body != nil {
				body = tc.body()
			}
			req, _ := http.NewRequest(tc.method, s.srv.URL, body)
			for k, v := range tc.header {
				req.Header[k] = v
			}
			cfg := clock.config()
			cfg.Transport = &http.Transport{DisableKeepAlives: true} // no net/http retry of its own
			resp, err := mustClient(t, cfg).Do(req)
			if err == nil {
				resp.Body.Close()
			}
			if s.requests() != tc.requests {
				t.Errorf("server saw %d requests, want %d (err %v)", s.requests(), tc.requests, err)
			}
			if tc.requests == 2 && tc.body != nil && s.bodies[1] != "pay" {
				t.Errorf("retried body %q, want %q", s.bodies[1], "pay")
			}
		})
	}
}

func TestContextCancelledDuringWait(t *testing.T) {
	refused := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		close(refused)
	}))
	defer srv.Close()
	c := mustClient(t, Config{}) // the real timer
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	done := make(chan error, 1)
	go func() {
		_, err := c.Do(req)
		done <- err
	}()
	<-refused
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancellation did not end the wait")
	}
}

func TestConcurrentUse(t *testing.T) {
	clock := newFakeClock()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) % 4 {
		case 0:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(429)
		case 1:
			w.Header().Set("RateLimit", `"d";r=0;t=1`)
		case 2:
			w.WriteHeader(503)
		}
	}))
	defer srv.Close()
	cfg := clock.config()
	cfg.MaxAttempts = 20
	c := mustClient(t, cfg)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() {
			resp, err := c.Get(srv.URL)
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- errors.New(resp.Status)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestConfigValidate(t *testing.T) {
	_, err := New(Config{MaxAttempts: -1, BaseDelay: -1, MaxDelay: -1, MaxWait: -1, MaxHosts: -1, Strategy: 42})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("err = %v", err)
	}
	for _, field := range []string{"MaxAttempts", "BaseDelay", "MaxDelay", "MaxWait", "MaxHosts", "Strategy"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error does not name %s: %v", field, err)
		}
	}
	if _, err := New(Config{}); err != nil {
		t.Errorf("zero Config: %v", err)
	}
}

func TestPaceJitter(t *testing.T) {
	clock := newFakeClock()
	cfg := clock.config()
	cfg.Rand, cfg.PaceJitter = rndMax, 300*time.Millisecond
	s := newScript(t, clock, reply{status: 200, header: h("RateLimit", `"default";r=0;t=4`)})
	c := mustClient(t, cfg)
	get(t, c, s.srv.URL)
	get(t, c, s.srv.URL)
	if got := clock.Sleeps(); !slices.Equal(got, []time.Duration{4*time.Second + 300*time.Millisecond - 1}) {
		t.Errorf("slept %v, want 4s plus just under 300ms", got)
	}
}

func TestRewindFailureEndsTheRequest(t *testing.T) {
	clock := newFakeClock()
	s := newScript(t, clock, reply{status: 503})
	req, _ := http.NewRequest(http.MethodPut, s.srv.URL, strings.NewReader("x"))
	req.GetBody = func() (io.ReadCloser, error) { return nil, errors.New("gone") }
	tr, _ := New(clock.config())
	_, err := (&http.Client{Transport: tr}).Do(req)
	if err == nil || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("err = %v, want the GetBody failure", err)
	}
	if st := tr.pacer.hosts[hostKey(req.URL)]; st == nil || st.inflight != 0 {
		t.Errorf("pacer state after the failure: %+v, want nothing in flight", st)
	}
}

// TestClientTimeoutIsADeadline: http.Client.Timeout reaches the Transport
// as a context deadline, so a long Retry-After fails at once too.
func TestClientTimeoutIsADeadline(t *testing.T) {
	s := newScript(t, newFakeClock(), reply{status: 503, header: h("Retry-After", "30")})
	c := mustClient(t, Config{})
	c.Timeout = 5 * time.Second
	start := time.Now()
	_, err := c.Get(s.srv.URL)
	var werr *WaitError
	if !errors.As(err, &werr) || werr.Wait != 30*time.Second {
		t.Fatalf("err = %v, want a WaitError of 30s", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("returned after %v, want at once", d)
	}
}
