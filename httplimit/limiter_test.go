package httplimit

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// fakeClock is a settable Unix-ns clock for the store and the engine.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *fakeClock) now() int64          { return c.ns.Load() }
func (c *fakeClock) wall() time.Time     { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) add(d time.Duration) { c.ns.Add(int64(d)) }

// served counts the requests that reached the handler.
type served struct{ n atomic.Int64 }

func (s *served) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.n.Add(1)
	w.Header().Set("Content-Type", "text/plain")
	io.WriteString(w, "ok\n")
}

// setup starts a real HTTP server with the limiter in front of a counting
// handler.
func setup(t *testing.T, cfg rules.Config, lc Config) (*httptest.Server, *served, *fakeClock, *Limiter) {
	t.Helper()
	clk := newFakeClock()
	st, err := memory.New(memory.Config{Clock: clk.now, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg.Now = clk.wall
	e, err := rules.New(cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	s := &served{}
	l := New(e, lc)
	srv := httptest.NewServer(l.Handler(s))
	t.Cleanup(srv.Close)
	return srv, s, clk, l
}

func do(t *testing.T, method, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func fixed(limit int64, window string) []rules.Policy {
	return []rules.Policy{{Algorithm: "fixed_window", Limit: limit, Window: window}}
}

func TestAllowThenRefuseOverHTTP(t *testing.T) {
	srv, s, clk, _ := setup(t, rules.Config{Rules: []rules.Rule{{Name: "fixedwindow", Policies: fixed(2, "60s")}}}, Config{})
	clk.add(10 * time.Second)
	resp, _ := do(t, "GET", srv.URL+"/")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := resp.Header.Get("RateLimit-Policy"); got != `"fixedwindow";q=2;w=60` {
		t.Errorf("RateLimit-Policy %q", got)
	}
	if got := resp.Header.Get("RateLimit"); got != `"fixedwindow";r=1;t=50` {
		t.Errorf("RateLimit %q", got)
	}
	parseSF(t, resp.Header)
	do(t, "GET", srv.URL+"/")

	resp, body := do(t, "GET", srv.URL+"/items?x=1")
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if resp.Header.Get("Retry-After") != "50" || resp.Header.Get("Cache-Control") != "no-store" ||
		resp.Header.Get("Content-Type") != "application/problem+json" || resp.Header.Get("RateLimit") != `"fixedwindow";r=0;t=50` {
		t.Fatalf("headers %v", resp.Header)
	}
	parseSF(t, resp.Header)
	var p map[string]any
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if p["status"] != float64(429) || p["retry-after"] != float64(50) || p["instance"] != "/items" || p["type"] != rules.ProblemQuotaExceeded {
		t.Fatalf("problem %v", p)
	}
	if vp, _ := p["violated-policies"].([]any); len(vp) != 1 || vp[0] != "fixedwindow" {
		t.Fatalf("violated-policies %v", p["violated-policies"])
	}
	if s.n.Load() != 2 {
		t.Fatalf("handler served %d, want 2", s.n.Load())
	}

	// HEAD gets the status and headers, no body.
	resp, body = do(t, "HEAD", srv.URL+"/")
	if resp.StatusCode != 429 || len(body) != 0 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("HEAD: %d %q %v", resp.StatusCode, body, resp.Header)
	}

	// The window passes: allowed again.
	clk.add(50 * time.Second)
	if resp, _ := do(t, "GET", srv.URL+"/"); resp.StatusCode != 200 {
		t.Fatalf("next window: %d", resp.StatusCode)
	}
}

func parseSF(t *testing.T, h http.Header) {
	t.Helper()
	for _, name := range []string{"Ratelimit-Policy", "Ratelimit"} {
		if v := h.Values(name); len(v) > 0 {
			if _, err := httpsfv.UnmarshalList(v); err != nil {
				t.Errorf("%s %q: %v", name, v, err)
			}
		}
	}
	for _, name := range []string{"Ratelimit-Limit", "Ratelimit-Remaining", "Ratelimit-Reset"} {
		if v := h.Values(name); len(v) > 0 {
			if _, err := httpsfv.UnmarshalItem(v); err != nil {
				t.Errorf("%s %q: %v", name, v, err)
			}
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 0 {
			t.Errorf("Retry-After %q is not delay-seconds", v)
		}
	}
}

func TestStatus503LikeNginx(t *testing.T) {
	srv, _, _, _ := setup(t, rules.Config{
		Refusal: rules.Refusal{Status: 503},
		Rules:   []rules.Rule{{Name: "r", Policies: fixed(1, "1m")}},
	}, Config{})
	do(t, "GET", srv.URL+"/")
	resp, body := do(t, "GET", srv.URL+"/")
	var p map[string]any
	json.Unmarshal(body, &p)
	if resp.StatusCode != 503 || p["status"] != float64(503) || p["title"] != "Service Unavailable" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

// TestSpoofedForwardingHeadersIgnored: with no trusted proxy (the
// default), X-Forwarded-For, Forwarded and X-Real-IP from the client do
// not create new buckets.
func TestSpoofedForwardingHeadersIgnored(t *testing.T) {
	srv, s, _, _ := setup(t, rules.Config{Rules: []rules.Rule{{Name: "ip", Policies: fixed(3, "1m")}}}, Config{})
	codes := ""
	for i := 0; i < 6; i++ {
		fake := "198.51.100." + strconv.Itoa(i+1)
		resp, _ := do(t, "GET", srv.URL+"/", "X-Forwarded-For", fake, "Forwarded", "for="+fake, "X-Real-IP", fake)
		codes += strconv.Itoa(resp.StatusCode) + " "
	}
	if codes != "200 200 200 429 429 429 " || s.n.Load() != 3 {
		t.Fatalf("codes %s", codes)
	}
}

// TestTrustedProxyChain: behind a trusted proxy (the loopback peer), each
// forwarded client has its own bucket, and a client prepending a fake
// address to X-Forwarded-For gains nothing.
func TestTrustedProxyChain(t *testing.T) {
	srv, _, _, _ := setup(t, rules.Config{
		ClientIP: rules.ClientIP{TrustedProxies: []string{"127.0.0.0/8", "::1/128"}},
		Rules:    []rules.Rule{{Name: "ip", Policies: fixed(1, "1m")}},
	}, Config{})
	status := func(xff string) int {
		resp, _ := do(t, "GET", srv.URL+"/", "X-Forwarded-For", xff)
		return resp.StatusCode
	}
	if status("203.0.113.1") != 200 || status("203.0.113.2") != 200 {
		t.Fatal("distinct forwarded clients share a bucket")
	}
	if got := status("1.1.1.1, 203.0.113.1"); got != 429 {
		t.Fatalf("spoofed prefix: %d, want 429 (same client)", got)
	}
	// Two field lines are one list (RFC 9110 §5.3): the last line's
	// address is the proxy's view of the client.
	req, _ := http.NewRequest("GET", srv.URL+"/", nil)
	req.Header.Add("X-Forwarded-For", "9.9.9.9")
	req.Header.Add("X-Forwarded-For", "203.0.113.2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 {
		t.Fatalf("two field lines: %d, want 429", resp.StatusCode)
	}
	// IPv6 clients of one /64 share a bucket.
	if status("2001:db8:1:2::1") != 200 || status("2001:db8:1:2::ffff") != 429 || status("2001:db8:1:3::1") != 200 {
		t.Fatal("IPv6 /64 aggregation")
	}
}

func TestTiersCostsAndMultiPolicyOverHTTP(t *testing.T) {
	srv, _, _, _ := setup(t, rules.Config{
		Headers: rules.Headers{Styles: []string{rules.StyleDraft10, rules.StyleLegacy}},
		Rules: []rules.Rule{
			{
				Name: "api",
				Key:  rules.Key{"header:X-API-Key"},
				Tiers: &rules.Tiers{
					Plans: map[string][]rules.Policy{
						"free": fixed(10, "1m"),
						"pro":  fixed(100, "1m"),
					},
					Members: map[string]string{"pro-key": "pro"},
					Default: "free",
				},
				Cost: rules.Cost{By: []rules.CostBy{{Match: rules.Match{PathPrefixes: []string{"/search"}}, Cost: 5}}},
			},
			{Name: "daily", Key: rules.Key{"header:X-API-Key"}, Policies: fixed(1000, "1d")},
		},
	}, Config{})
	resp, _ := do(t, "GET", srv.URL+"/search?q=x", "X-API-Key", "free-key")
	if resp.Header.Get("X-Ratelimit-Remaining") != "5" || resp.Header.Get("X-Ratelimit-Limit") != "10" {
		t.Fatalf("free search: %v", resp.Header)
	}
	if got := resp.Header.Get("RateLimit-Policy"); got != `"api-free";q=10;w=60, "daily";q=1000;w=86400` {
		t.Fatalf("policy %q", got)
	}
	parseSF(t, resp.Header)
	do(t, "GET", srv.URL+"/search", "X-API-Key", "free-key")
	resp, _ = do(t, "GET", srv.URL+"/read", "X-API-Key", "free-key")
	if resp.StatusCode != 429 {
		t.Fatalf("free after 10 units: %d", resp.StatusCode)
	}
	resp, _ = do(t, "GET", srv.URL+"/search", "X-API-Key", "pro-key")
	if resp.StatusCode != 200 || resp.Header.Get("X-Ratelimit-Remaining") != "95" {
		t.Fatalf("pro: %d %v", resp.StatusCode, resp.Header)
	}
	// No key: neither rule applies, no headers.
	resp, _ = do(t, "GET", srv.URL+"/read")
	if resp.StatusCode != 200 || resp.Header.Get("RateLimit") != "" {
		t.Fatalf("anonymous: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestShadowOverHTTP(t *testing.T) {
	var refused atomic.Int64
	srv, s, _, _ := setup(t, rules.Config{
		Observer: rules.ObserverFunc(func(ev rules.Event) {
			if ev.Outcome == rules.ShadowRefused {
				refused.Add(1)
			}
		}),
		Rules: []rules.Rule{{Name: "trial", Shadow: true, Policies: fixed(1, "1m")}},
	}, Config{})
	for i := 0; i < 4; i++ {
		resp, _ := do(t, "GET", srv.URL+"/")
		if resp.StatusCode != 200 || resp.Header.Get("RateLimit") != "" {
			t.Fatalf("shadow request %d: %d %v", i, resp.StatusCode, resp.Header)
		}
	}
	if s.n.Load() != 4 || refused.Load() != 3 {
		t.Fatalf("served %d, shadow refusals %d", s.n.Load(), refused.Load())
	}
}

// fakeWait records the delays it is asked for and returns at once.
type fakeWait struct {
	waits chan time.Duration
}

func (f *fakeWait) wait(ctx context.Context, d time.Duration) error {
	f.waits <- d
	return nil
}

func TestDelayWaitsBeforeServing(t *testing.T) {
	fw := &fakeWait{waits: make(chan time.Duration, 10)}
	srv, s, _, _ := setup(t, rules.Config{Rules: []rules.Rule{{
		Name:     "shape",
		MaxDelay: 250 * time.Millisecond,
		Policies: []rules.Policy{{Algorithm: "leaky_bucket", Rate: "10/s", Burst: 5, Delay: 1}},
	}}}, Config{Wait: fw.wait})
	var codes []int
	for i := 0; i < 7; i++ {
		resp, _ := do(t, "GET", srv.URL+"/")
		codes = append(codes, resp.StatusCode)
	}
	close(fw.waits)
	var waits []time.Duration
	for d := range fw.waits {
		waits = append(waits, d)
	}
	ms := time.Millisecond
	// delay=1: requests 1-2 at once; 3-6 wait 100..400ms, capped at 250ms;
	// 7 is above the burst.
	want := []time.Duration{100 * ms, 200 * ms, 250 * ms, 250 * ms}
	if len(waits) != len(want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	}
	if codes[6] != 429 || s.n.Load() != 6 {
		t.Fatalf("codes %v served %d", codes, s.n.Load())
	}
}

// TestDelayEndsWhenClientGoesAway: a delayed request whose client
// disconnects stops waiting, is counted, and never reaches the handler.
func TestDelayEndsWhenClientGoesAway(t *testing.T) {
	waiting := make(chan struct{})
	block := func(ctx context.Context, d time.Duration) error {
		close(waiting)
		<-ctx.Done() // only the client's departure ends this wait
		return ctx.Err()
	}
	gone := make(chan time.Duration, 1)
	srv, s, _, l := setup(t, rules.Config{Rules: []rules.Rule{{
		Name:     "shape",
		Policies: []rules.Policy{{Algorithm: "leaky_bucket", Rate: "1/s", Burst: 5}},
	}}}, Config{Wait: block, OnDelayCancelled: func(r *http.Request, res *rules.Result) { gone <- res.Delay }})
	do(t, "GET", srv.URL+"/") // first: no delay
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/", nil)
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-waiting
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the cancelled request succeeded")
	}
	if d := <-gone; d != time.Second {
		t.Fatalf("cancelled delay %v, want 1s", d)
	}
	if l.DelaysCancelled() != 1 || s.n.Load() != 1 {
		t.Fatalf("cancelled %d served %d", l.DelaysCancelled(), s.n.Load())
	}
}

func TestSleepEndsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); err != context.Canceled {
		t.Fatalf("Sleep on a cancelled context: %v", err)
	}
	if err := Sleep(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
}

func TestSwapKeepsCounters(t *testing.T) {
	clk := newFakeClock()
	st, _ := memory.New(memory.Config{Clock: clk.now, SweepInterval: -1})
	defer st.Close()
	cfg := rules.Config{Rules: []rules.Rule{{Name: "ip", Policies: fixed(2, "1m")}}}
	e1, _ := rules.New(cfg, st)
	l := New(e1, Config{})
	srv := httptest.NewServer(l.Handler(&served{}))
	defer srv.Close()
	do(t, "GET", srv.URL+"/")
	cfg.Headers.Styles = []string{rules.StyleLegacy}
	e2, _ := rules.New(cfg, st)
	l.Swap(e2)
	resp, _ := do(t, "GET", srv.URL+"/")
	if resp.Header.Get("X-Ratelimit-Remaining") != "0" {
		t.Fatalf("after swap: %v", resp.Header)
	}
}
