package bench

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/tollgate-dev/tollgate/client"
	"github.com/tollgate-dev/tollgate/httplimit"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// Client backoff under contention (issue 7): the AWS "Exponential Backoff
// and Jitter" comparison on a tollgate-limited server. 100 independent
// clients start together and make one request each against one shared
// token bucket of 100/s with a burst of 10 (httplimit over store/memory,
// real time, loopback). Each iteration is one whole run; use
// -benchtime=1x -count=N. Reported per run: seconds until the last client
// finished, requests on the wire, refusals.
//
// "blind" strips Retry-After and the RateLimit fields from responses, so
// clients back off on their own (the AWS set-up; base 5ms, cap 2s);
// "headers" leaves them. The peer is hashicorp/go-retryablehttp: with its
// defaults it waits exactly the Retry-After, with no jitter; blind, with
// RetryWaitMin 5ms and RetryWaitMax 2s, it is plain exponential backoff.

const (
	herdClients = 100
	herdRate    = "100/s"
	herdBurst   = 10
)

type herdServer struct {
	srv           *httptest.Server
	wire, refused atomic.Int64
}

func newHerdServer(b *testing.B, blind bool) *herdServer {
	st, err := memory.New(memory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	e, err := rules.New(rules.Config{Rules: []rules.Rule{{
		Name:     "api",
		Policies: []rules.Policy{{Algorithm: "token_bucket", Rate: herdRate, Burst: herdBurst}},
	}}}, st)
	if err != nil {
		b.Fatal(err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mw := httplimit.New(e, httplimit.Config{}).Handler(ok)
	s := &herdServer{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.wire.Add(1)
		mw.ServeHTTP(&herdWriter{ResponseWriter: w, s: s, blind: blind}, r)
	}))
	b.Cleanup(s.srv.Close)
	return s
}

type herdWriter struct {
	http.ResponseWriter
	s     *herdServer
	blind bool
}

func (w *herdWriter) WriteHeader(code int) {
	if code == http.StatusTooManyRequests {
		w.s.refused.Add(1)
	}
	if w.blind {
		for _, k := range []string{"Retry-After", "Ratelimit", "Ratelimit-Policy"} {
			delete(w.Header(), k)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *herdWriter) Write(p []byte) (int, error) { return w.ResponseWriter.Write(p) }

// runClientHerd runs one herd; mk makes each client over the shared
// connection pool.
func runClientHerd(b *testing.B, blind bool, mk func(base http.RoundTripper) *http.Client) (time.Duration, int64, int64) {
	s := newHerdServer(b, blind)
	pool := &http.Transport{MaxIdleConns: 2 * herdClients, MaxIdleConnsPerHost: 2 * herdClients}
	defer pool.CloseIdleConnections()
	clients := make([]*http.Client, herdClients)
	for i := range clients {
		clients[i] = mk(pool)
	}
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, c := range clients {
		wg.Go(func() {
			if !getOK(c, s.srv.URL) {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d clients failed", n)
	}
	return elapsed, s.wire.Load(), s.refused.Load()
}

func tollgateClient(s client.Strategy) func(http.RoundTripper) *http.Client {
	return tollgateClientJitter(s, 0)
}

// tollgateClientJitter sets RetryJitter too (0: the default 1s; negative:
// none, to show what the spread after Retry-After is worth).
func tollgateClientJitter(s client.Strategy, retryJitter time.Duration) func(http.RoundTripper) *http.Client {
	return func(base http.RoundTripper) *http.Client {
		c, err := client.NewClient(client.Config{
			Transport: base, MaxAttempts: 1000, Strategy: s,
			BaseDelay: 5 * time.Millisecond, MaxDelay: 2 * time.Second,
			RetryJitter: retryJitter,
		})
		if err != nil {
			panic(err)
		}
		return c
	}
}

func retryableClient(min, max time.Duration) func(http.RoundTripper) *http.Client {
	return func(base http.RoundTripper) *http.Client {
		c := retryablehttp.NewClient()
		c.HTTPClient = &http.Client{Transport: base}
		c.Logger = nil
		c.RetryMax = 1000 // every client must finish; the default (4) gives up
		if min > 0 {
			c.RetryWaitMin, c.RetryWaitMax = min, max
		}
		return c.StandardClient()
	}
}

func BenchmarkClientHerd(b *testing.B) {
	for _, tc := range []struct {
		name  string
		blind bool
		mk    func(http.RoundTripper) *http.Client
	}{
		{"blind/tollgate_full_jitter", true, tollgateClient(client.FullJitter)},
		{"blind/tollgate_no_jitter", true, tollgateClient(client.NoJitter)},
		{"blind/retryablehttp_exponential", true, retryableClient(5*time.Millisecond, 2*time.Second)},
		{"headers/tollgate", false, tollgateClient(client.FullJitter)},
		{"headers/tollgate_no_retry_jitter", false, tollgateClientJitter(client.FullJitter, -1)},
		{"headers/retryablehttp_default", false, retryableClient(0, 0)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var elapsed time.Duration
			var wire, refused int64
			for b.Loop() {
				e, w, r := runClientHerd(b, tc.blind, tc.mk)
				elapsed += e
				wire += w
				refused += r
			}
			n := float64(b.N)
			b.ReportMetric(elapsed.Seconds()/n, "s-complete/op")
			b.ReportMetric(float64(wire)/n, "wire-req/op")
			b.ReportMetric(float64(refused)/n, "refused/op")
		})
	}
}

// BenchmarkClientThousand: one client (one Transport shared by 8
// goroutines) makes 1,000 requests against a 50/s token bucket (burst 50)
// with the draft-10 headers and Retry-After, in real time. tollgate's
// client paces by the headers; go-retryablehttp (defaults, RetryMax raised
// so that every request completes) only reacts to refusals. Reported per
// run: seconds, requests on the wire, refusals.
func BenchmarkClientThousand(b *testing.B) {
	for _, tc := range []struct {
		name string
		mk   func(http.RoundTripper) *http.Client
	}{
		{"tollgate", tollgateClient(client.FullJitter)},
		{"retryablehttp_default", retryableClient(0, 0)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var elapsed time.Duration
			var wire, refused int64
			for b.Loop() {
				e, w, r := runThousand(b, tc.mk)
				elapsed += e
				wire += w
				refused += r
			}
			n := float64(b.N)
			b.ReportMetric(elapsed.Seconds()/n, "s-complete/op")
			b.ReportMetric(float64(wire)/n, "wire-req/op")
			b.ReportMetric(float64(refused)/n, "refused/op")
		})
	}
}

func runThousand(b *testing.B, mk func(http.RoundTripper) *http.Client) (time.Duration, int64, int64) {
	st, err := memory.New(memory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	e, err := rules.New(rules.Config{Rules: []rules.Rule{{
		Name:     "api",
		Policies: []rules.Policy{{Algorithm: "token_bucket", Rate: "50/s"}},
	}}}, st)
	if err != nil {
		b.Fatal(err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mw := httplimit.New(e, httplimit.Config{}).Handler(ok)
	s := &herdServer{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.wire.Add(1)
		mw.ServeHTTP(&herdWriter{ResponseWriter: w, s: s}, r)
	}))
	defer s.srv.Close()
	pool := &http.Transport{MaxIdleConnsPerHost: 16}
	defer pool.CloseIdleConnections()
	c := mk(pool)
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			for next.Add(1) <= 1000 {
				if !getOK(c, s.srv.URL) {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d requests failed", n)
	}
	return elapsed, s.wire.Load(), s.refused.Load()
}

// getOK fetches url with c, reads the body, and reports whether the
// answer was 200.
func getOK(c *http.Client, url string) bool {
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
