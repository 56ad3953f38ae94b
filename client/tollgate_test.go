package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/httplimit"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// limited is an httptest.Server behind the tollgate middleware (httplimit
// over a rules.Engine over store/memory), counting what reaches it on the
// wire.
type limited struct {
	srv     *httptest.Server
	wire    atomic.Int64 // requests received
	refused atomic.Int64 // of which answered 429
}

type limitedOptions struct {
	policy rules.Policy
	styles []string // rules.Headers.Styles; nil: draft10
	reset  string   // rules.Headers.Reset for the legacy style
	// now drives the store and the epoch headers; nil: the real clock.
	now func() time.Time
	// blind strips every rate-limit field and Retry-After from responses,
	// for clients that must back off without hints (the AWS set-up).
	blind bool
	// lastUnit, when set, makes a response that leaves nothing (r=0) say
	// when the next unit is back, lastUnit from now, in its RateLimit t
	// and its epoch X-RateLimit-Reset, instead of when the bucket is full:
	// a server that reports the next unit rather than the full refill.
	lastUnit time.Duration
}

func newLimited(tb testing.TB, o limitedOptions) *limited {
	tb.Helper()
	var storeClock func() int64
	if o.now != nil {
		storeClock = func() int64 { return o.now().UnixNano() }
	}
	store, err := memory.New(memory.Config{Clock: storeClock})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	engine, err := rules.New(rules.Config{
		Rules:   []rules.Rule{{Name: "api", Policies: []rules.Policy{o.policy}}},
		Headers: rules.Headers{Styles: o.styles, Reset: o.reset},
		Now:     o.now,
	}, store)
	if err != nil {
		tb.Fatal(err)
	}
	l := &limited{}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mw := httplimit.New(engine, httplimit.Config{}).Handler(ok)
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.wire.Add(1)
		mw.ServeHTTP(&recorder{ResponseWriter: w, l: l, blind: o.blind, lastUnit: o.lastUnit, now: o.now}, r)
	}))
	tb.Cleanup(l.srv.Close)
	return l
}

// recorder counts refusals and, when blind, removes the server's hints.
type recorder struct {
	http.ResponseWriter
	l        *limited
	blind    bool
	lastUnit time.Duration
	now      func() time.Time
}

func (r *recorder) WriteHeader(code int) {
	if code == http.StatusTooManyRequests {
		r.l.refused.Add(1)
	}
	if r.blind {
		h := r.Header()
		for _, k := range []string{"Retry-After", "Ratelimit", "Ratelimit-Policy", "Ratelimit-Limit", "Ratelimit-Remaining", "Ratelimit-Reset", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"} {
			delete(h, k)
		}
	}
	if r.lastUnit > 0 {
		r.reportNextUnit()
	}
	r.ResponseWriter.WriteHeader(code)
}

// reportNextUnit rewrites a response that leaves nothing to say when the
// next unit is back (lastUnit), in whole seconds rounded up.
func (r *recorder) reportNextUnit() {
	h := r.Header()
	v := h.Get("Ratelimit")
	i := strings.Index(v, ";r=0;t=")
	if i < 0 {
		return
	}
	now := time.Now()
	if r.now != nil {
		now = r.now()
	}
	secs := int64((r.lastUnit + time.Second - 1) / time.Second)
	h.Set("Ratelimit", v[:i]+";r=0;t="+itoa(secs))
	if h.Get("X-Ratelimit-Reset") != "" {
		at := now.Add(r.lastUnit).UnixNano()
		h.Set("X-Ratelimit-Reset", itoa((at+int64(time.Second)-1)/int64(time.Second)))
	}
}

func (r *recorder) Write(b []byte) (int, error) { return r.ResponseWriter.Write(b) }

// fetch sends one GET and reports whether it ended in a 200.
func fetch(c *http.Client, url string) (bool, error) {
	resp, err := c.Get(url)
	if err != nil {
		return false, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, nil
}

// TestThousandRequestsAtFiftyPerSecond is acceptance item 4: one client
// making 1,000 requests against a 50/s limit completes all of them, paced
// by the headers, and sends (on the wire) at most a few into a 429. The
// server's store and the client share an injected clock, so the ~19
// seconds the limit imposes pass without real waiting; everything else is
// real HTTP over loopback through the middleware. Each header style the
// middleware offers is tried.
func TestThousandRequestsAtFiftyPerSecond(t *testing.T) {
	for _, tc := range []struct {
		name    string
		styles  []string
		reset   string
		slowest time.Duration
	}{
		{"draft10", nil, "", 25 * time.Second},
		{"draft6", []string{rules.StyleDraft6}, "", 25 * time.Second},
		// An epoch in whole seconds, rounded up, points up to a second
		// past the real reset: with a one-second refill the client waits
		// up to twice as long. That is the header's resolution, not the
		// client's doing.
		{"legacy epoch", []string{rules.StyleLegacy}, "epoch", 40 * time.Second},
		{"legacy delta", []string{rules.StyleLegacy}, "delta", 25 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each its own server and injected clock
			clock := newFakeClock()
			srv := newLimited(t, limitedOptions{
				policy: rules.Policy{Algorithm: "token_bucket", Rate: "50/s"},
				styles: tc.styles, reset: tc.reset, now: clock.Now,
			})
			cfg := clock.config()
			cfg.Rand = nil // real jitter: it must not break the pacing
			cfg.RetryJitter, cfg.PaceJitter = 0, 0
			c := mustClient(t, cfg)
			start := clock.Now()
			for i := range 1000 {
				ok, err := fetch(c, srv.srv.URL)
				if err != nil || !ok {
					t.Fatalf("request %d: ok=%v err=%v", i, ok, err)
				}
			}
			elapsed := clock.Now().Sub(start)
			t.Logf("1000 requests done in %v of (injected) time; %d on the wire, %d refused", elapsed, srv.wire.Load(), srv.refused.Load())
			if n := srv.refused.Load(); n > 3 {
				t.Errorf("%d requests refused on the wire, want at most a few", n)
			}
			// 950 after the initial burst of 50, at 50/s: at least 19s; and
			// the pacing should not be much slower than the limit.
			if elapsed < 19*time.Second || elapsed > tc.slowest {
				t.Errorf("took %v of injected time, want 19s-%v", elapsed, tc.slowest)
			}
		})
	}
}

// TestConcurrentCallersShareTheAllowance: one client (one Transport)
// used by 8 goroutines against the 50/s limit, in real time. The pacer
// counts requests in flight against the advertised remaining, so the
// callers do not all spend the last unit. 200 requests by default (about
// 3s); TOLLGATE_CLIENT_LOAD=1 runs the full 1,000 (about 19s).
func TestConcurrentCallersShareTheAllowance(t *testing.T) {
	t.Parallel()
	total := 200
	if os.Getenv("TOLLGATE_CLIENT_LOAD") != "" {
		total = 1000
	}
	const workers = 8
	srv := newLimited(t, limitedOptions{policy: rules.Policy{Algorithm: "token_bucket", Rate: "50/s"}})
	c := mustClient(t, Config{MaxAttempts: 10})
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(total) {
				ok, err := fetch(c, srv.srv.URL)
				if err != nil || !ok {
					t.Errorf("ok=%v err=%v", ok, err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	t.Logf("%d requests from %d goroutines in %v; %d on the wire, %d refused", total, workers, elapsed, srv.wire.Load(), srv.refused.Load())
	if n := srv.refused.Load(); n > 3 {
		t.Errorf("%d requests refused on the wire, want at most a few", n)
	}
}

// TestMiddlewareRetryAfterWithoutRateLimitFields: with the middleware's
// rate-limit fields turned off, only Retry-After on a refusal guides the
// client. 200 requests at 50/s: each refusal's Retry-After brings the
// client back when the bucket has refilled, so there is about one refusal
// per refill and never a second refusal for the same request.
func TestMiddlewareRetryAfterWithoutRateLimitFields(t *testing.T) {
	clock := newFakeClock()
	srv := newLimited(t, limitedOptions{
		policy: rules.Policy{Algorithm: "token_bucket", Rate: "50/s"},
		styles: []string{}, now: clock.Now,
	})
	cfg := clock.config()
	cfg.MaxAttempts = 2 // a second refusal would surface as a 429
	c := mustClient(t, cfg)
	for i := range 200 {
		ok, err := fetch(c, srv.srv.URL)
		if err != nil || !ok {
			t.Fatalf("request %d: ok=%v err=%v", i, ok, err)
		}
	}
	if n := srv.refused.Load(); n < 3 || n > 4 {
		t.Errorf("%d refusals, want 3 or 4 (one per refill of the bucket)", n)
	}
	var waited time.Duration
	for _, d := range clock.Sleeps() {
		waited += d
	}
	if waited < 3*time.Second {
		t.Errorf("waited %v in all, want at least 3s of Retry-After", waited)
	}
	t.Logf("200 requests: %d on the wire, %d refused, %v waited", srv.wire.Load(), srv.refused.Load(), waited)
}

// The default gateway's policy (config/default.yaml) and header styles.
var (
	gatewayPolicy = rules.Policy{Algorithm: "token_bucket", Rate: "5/s", Burst: 10}
	gatewayStyles = []string{rules.StyleDraft10, rules.StyleLegacy}
)

// Of 30 requests against gatewayPolicy, a client with a full bucket can
// send the first 10 at once and the other 20 at 5/s (4s); sent again at
// once, with the bucket empty, all 30 at 5/s (6s). The ideal times are
// from the first request to the last.
const (
	paceRequests   = 30
	idealFullStart = 4 * time.Second
	idealEmpty     = 6 * time.Second
)

// paceRuns sends paceRequests GETs one after the other through c to url,
// twice, and returns how long each run took by now.
func paceRuns(tb testing.TB, c *http.Client, url string, now func() time.Time) (full, empty time.Duration) {
	tb.Helper()
	run := func() time.Duration {
		start := now()
		for i := range paceRequests {
			if ok, err := fetch(c, url); err != nil || !ok {
				tb.Fatalf("request %d: ok=%v err=%v", i, ok, err)
			}
		}
		return now().Sub(start)
	}
	return run(), run()
}

// TestPacingKeepsUpWithTheLimit: 30 requests, twice, through the default
// Config against the default gateway's limit and header styles, take
// within 10% of the time the limit allows, with no 429: the client waits
// as long as the RateLimit field's delta says, not the second later an
// epoch X-RateLimit-Reset rounds up to (the first run took 4.9s, not 4s,
// when the requests fell a tenth into a second). Whether the server reports the full
// refill or the next unit on its last allowed request, the client keeps
// up.
func TestPacingKeepsUpWithTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lastUnit time.Duration
	}{
		{"full refill", 0},
		{"next unit", 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			clock.Sleep(context.Background(), 100*time.Millisecond) // requests fall anywhere in a second
			srv := newLimited(t, limitedOptions{policy: gatewayPolicy, styles: gatewayStyles, now: clock.Now, lastUnit: tc.lastUnit})
			cfg := clock.config()
			cfg.PaceJitter = 0 // the default
			c := mustClient(t, cfg)
			full, empty := paceRuns(t, c, srv.srv.URL, clock.Now)
			t.Logf("%v (ideal %v), then %v (ideal %v); %d on the wire, %d refused", full, idealFullStart, empty, idealEmpty, srv.wire.Load(), srv.refused.Load())
			if n := srv.refused.Load(); n != 0 {
				t.Errorf("%d requests refused", n)
			}
			if full > idealFullStart*11/10 || empty > idealEmpty*11/10 {
				t.Errorf("took %v and %v, want within 10%% of %v and %v", full, empty, idealFullStart, idealEmpty)
			}
		})
	}
}

// BenchmarkPacing runs TestPacingKeepsUpWithTheLimit's two runs in real
// time through the default Config (jitter included) against the
// middleware, reporting each run's time over the ideal as a ratio (1 is
// the limit's own pace) and the 429s, for a server reporting the full
// refill on its last allowed request and one reporting the next unit.
// About 10s an iteration.
func BenchmarkPacing(b *testing.B) {
	for _, bc := range []struct {
		name     string
		lastUnit time.Duration
	}{{"full-refill", 0}, {"next-unit", 200 * time.Millisecond}} {
		b.Run(bc.name, func(b *testing.B) {
			var full, empty time.Duration
			var refused int64
			for b.Loop() {
				srv := newLimited(b, limitedOptions{policy: gatewayPolicy, styles: gatewayStyles, lastUnit: bc.lastUnit})
				c := mustClient(b, Config{})
				f, e := paceRuns(b, c, srv.srv.URL, time.Now)
				full, empty, refused = full+f, empty+e, refused+srv.refused.Load()
			}
			n := float64(b.N)
			b.ReportMetric(float64(full)/n/float64(idealFullStart), "full/ideal")
			b.ReportMetric(float64(empty)/n/float64(idealEmpty), "empty/ideal")
			b.ReportMetric(float64(refused)/n, "429/op")
		})
	}
}
