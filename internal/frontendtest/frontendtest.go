// Package frontendtest is one table of request-sequence cases (allowed,
// refused, refused HEAD, a penalty and refusals under it, delayed,
// delayed with the client gone) that
// every front end of the rule engine runs against itself: the gateway's
// HTTP/1.1 (fasthttp), HTTP/2 and gRPC paths, forward-auth and the
// net/http middleware. They all carry out a decision with the same
// three steps (httplimit's and fastlimit's Decide, Enforce, Finish), so
// they must answer each case alike: Run holds them to it.
package frontendtest

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/rules"
)

// FrontEnd is one front end under test.
type FrontEnd struct {
	Name string
	// GRPC: the front end answers gRPC calls (POST application/grpc),
	// a refusal as grpc-status 8 RESOURCE_EXHAUSTED; HEAD is not asked.
	GRPC bool
	// Start serves cfg's rules, on a fresh memory store, in front of an
	// Origin (or, for forward-auth, as the answer itself).
	Start func(t *testing.T, cfg rules.Config) *Running
}

// Running is a started front end.
type Running struct {
	// URL is where requests go; Client sends them.
	URL    string
	Client *http.Client
	// Prepare, when set, turns a request into what the front end is
	// asked (forward-auth: the auth request describing it).
	Prepare func(r *http.Request)
	// Served is how many requests were served: reached the origin
	// (forward-auth: answered allowed).
	Served func() int
	// Waiting, when set, receives when the front end starts a delay (an
	// injected Config.Wait): a leaving client leaves then. Without it,
	// the client leaves once Received counts its request.
	Waiting <-chan struct{}
	// Received counts the requests the front end has read and begun to
	// decide, for a leaving client when Waiting is nil. It cannot leave
	// on its own side's news: net/http reports a request written
	// (httptrace WroteRequest) before it flushes it to the socket, so a
	// client leaving then can close the connection before the request
	// is sent, and the front end never sees it.
	Received func() int
	// Ended waits until the front end has ended n requests.
	Ended func(t *testing.T, n int)
	// Cancelled, when set, counts the delays cancelled by a client's
	// departure.
	Cancelled func() uint64
}

// Case is one row of the table: Before requests that are each served,
// then the one examined.
type Case struct {
	Name   string
	Rules  rules.Config
	Method string
	Before int
	// Leave: the client goes away while the examined request is delayed.
	Leave bool
	Want  Want
	// MinWait is how long the examined request must at least have
	// waited before its answer.
	MinWait time.Duration
	// RefusedBefore are requests after Before, each refused as the
	// examined one is, before it.
	RefusedBefore int
	// RetryAfter, when set, bounds the Retry-After (seconds) of every
	// refused request: {min, max}.
	RetryAfter [2]int
}

// Want is what a case expects of the examined request.
type Want int

const (
	// Served: it reaches the origin; the answer carries the rate-limit
	// fields.
	Served Want = iota
	// Refused: it does not reach the origin; the answer is the refusal
	// (429 problem+json, nosniff, no-store, Retry-After, rate-limit
	// fields; on gRPC grpc-status 8 with them as metadata).
	Refused
	// Dropped: its client went away during its delay: it does not reach
	// the origin (nginx's 499), and a front end that counts cancelled
	// delays counted it.
	Dropped
)

func bucket(rate string, burst int64) rules.Config {
	return rules.Config{Rules: []rules.Rule{{Name: "per-ip", Policies: []rules.Policy{
		{Algorithm: "token_bucket", Rate: rate, Burst: burst}}}}}
}

// penalized is 1 request an hour per client IP, and a key refused once
// is refused for 2 hours: a Retry-After no window gives.
func penalized() rules.Config {
	return rules.Config{Rules: []rules.Rule{{Name: "per-ip", Policies: []rules.Policy{
		{Algorithm: "fixed_window", Limit: 1, Window: "1h", Penalty: 2 * time.Hour}}}}}
}

func shaping(rate string) rules.Config {
	return rules.Config{Rules: []rules.Rule{{Name: "shape", Policies: []rules.Policy{
		{Algorithm: "leaky_bucket", Rate: rate, Burst: 5, Delay: 1}}}}}
}

// Cases is the table.
var Cases = []Case{
	{Name: "allowed", Rules: bucket("1/h", 2), Method: http.MethodGet, Want: Served},
	{Name: "refused", Rules: bucket("1/h", 1), Method: http.MethodGet, Before: 1, Want: Refused},
	{Name: "refused HEAD", Rules: bucket("1/h", 1), Method: http.MethodHead, Before: 1, Want: Refused},
	// 5/s, delay 1 (nginx's delay=1): two requests pass at once, the
	// third waits about 200ms, then is served.
	{Name: "delayed", Rules: shaping("5/s"), Method: http.MethodGet, Before: 2, Want: Served, MinWait: 100 * time.Millisecond},
	// A penalty (rules.Policy.Penalty) is decided before the answer, so
	// every front end carries it out: the first refusal starts it, and
	// it and the ones after say its exact time left, 2h.
	{Name: "penalty", Rules: penalized(), Method: http.MethodGet, Before: 1, Want: Refused, RetryAfter: [2]int{7200 - 30, 7200}},
	{Name: "penalty in force", Rules: penalized(), Method: http.MethodGet, Before: 1, RefusedBefore: 2, Want: Refused, RetryAfter: [2]int{7200 - 30, 7200}},
	// 1/s: the third waits about a second; its client leaves first.
	{Name: "delayed, client gone", Rules: shaping("1/s"), Method: http.MethodGet, Before: 2, Leave: true, Want: Dropped},
}

// Origin is an origin that counts the requests it serves: 200 "ok", or
// a gRPC call's trailers-only OK (grpc-status 0) when it is one.
func Origin() (http.Handler, func() int) {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		io.Copy(io.Discard, r.Body) //nolint:errcheck // a test origin
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Grpc-Status", "0")
			w.WriteHeader(http.StatusOK)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok") //nolint:errcheck // a test origin
	}), func() int { return int(n.Load()) }
}

// Track wraps h to count the requests it has ended, for Running.Ended.
func Track(h http.Handler) (http.Handler, func(t *testing.T, n int)) {
	var ended atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer ended.Add(1)
			h.ServeHTTP(w, r)
		}), func(t *testing.T, n int) {
			t.Helper()
			Until(t, func() bool { return ended.Load() >= int64(n) })
		}
}

// Until waits for cond, polled every millisecond, for at most 10s.
func Until(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not reached in 10s")
		}
	}
}

// Run runs every case against fe, each on a newly started front end.
func Run(t *testing.T, fe FrontEnd) {
	t.Run(fe.Name, func(t *testing.T) {
		for _, c := range Cases {
			if fe.GRPC && c.Method == http.MethodHead {
				continue
			}
			t.Run(c.Name, func(t *testing.T) { run(t, fe, c) })
		}
	})
}

func run(t *testing.T, fe FrontEnd, c Case) {
	fe2 := fe.Start(t, c.Rules)
	newReq := func(ctx context.Context) *http.Request {
		method, body := c.Method, io.Reader(nil)
		if fe.GRPC {
			method, body = http.MethodPost, strings.NewReader("\x00\x00\x00\x00\x00") // one empty message
		}
		req, err := http.NewRequestWithContext(ctx, method, fe2.URL+"/svc/Method", body)
		if err != nil {
			t.Fatal(err)
		}
		if fe.GRPC {
			req.Header.Set("Content-Type", "application/grpc")
			req.Header.Set("Te", "trailers")
		}
		if fe2.Prepare != nil {
			fe2.Prepare(req)
		}
		return req
	}
	do := func(req *http.Request) (*http.Response, []byte, error) {
		resp, err := fe2.Client.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}
	for i := 0; i < c.Before; i++ {
		resp, _, err := do(newReq(context.Background()))
		if err != nil {
			t.Fatalf("request %d before: %v", i+1, err)
		}
		checkServed(t, fe, resp)
	}
	if fe2.Served() != c.Before {
		t.Fatalf("%d requests before served %d times", c.Before, fe2.Served())
	}
	for i := 0; i < c.RefusedBefore; i++ {
		resp, body, err := do(newReq(context.Background()))
		if err != nil {
			t.Fatalf("refused request %d before: %v", i+1, err)
		}
		checkRefused(t, fe, c, resp, body)
	}
	if c.Leave {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		switch {
		case fe2.Waiting != nil:
			go func() {
				<-fe2.Waiting
				cancel()
			}()
		case fe2.Received != nil:
			n := c.Before + c.RefusedBefore + 1
			go func() {
				defer cancel()
				for deadline := time.Now().Add(10 * time.Second); fe2.Received() < n && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
			}()
		default:
			t.Fatal("a front end without Waiting needs Received for a leaving client")
		}
		if resp, _, err := do(newReq(ctx)); err == nil {
			t.Fatalf("the client that left got an answer: %d %v", resp.StatusCode, resp.Header)
		}
		fe2.Ended(t, c.Before+1)
		if n := fe2.Served(); n != c.Before {
			t.Errorf("a delayed request whose client went away was served (served %d, want %d)", n, c.Before)
		}
		if fe2.Cancelled != nil {
			if n := fe2.Cancelled(); n != 1 {
				t.Errorf("cancelled delays counted %d, want 1", n)
			}
		}
		return
	}
	t0 := time.Now()
	resp, body, err := do(newReq(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(t0); took < c.MinWait {
		t.Errorf("answered after %v, want at least %v (its delay)", took, c.MinWait)
	}
	fe2.Ended(t, c.Before+1)
	switch c.Want {
	case Served:
		checkServed(t, fe, resp)
		if n := fe2.Served(); n != c.Before+1 {
			t.Errorf("served %d, want %d", n, c.Before+1)
		}
	case Refused:
		checkRefused(t, fe, c, resp, body)
		if n := fe2.Served(); n != c.Before {
			t.Errorf("a refused request was served (served %d, want %d)", n, c.Before)
		}
	}
}

func checkServed(t *testing.T, fe FrontEnd, resp *http.Response) {
	t.Helper()
	if resp.StatusCode != http.StatusOK || fe.GRPC && grpcStatus(resp) != "0" {
		t.Fatalf("served: %d grpc-status %q %v, want 200", resp.StatusCode, grpcStatus(resp), resp.Header)
	}
	if resp.Header.Get(rules.HeaderRateLimit) == "" || resp.Header.Get(rules.HeaderRateLimitPolicy) == "" {
		t.Errorf("served without the rate-limit fields: %v", resp.Header)
	}
}

func checkRefused(t *testing.T, fe FrontEnd, c Case, resp *http.Response, body []byte) {
	t.Helper()
	method := c.Method
	h := resp.Header
	if h.Get(rules.HeaderRateLimit) == "" || h.Get(rules.HeaderRetryAfter) == "" {
		t.Errorf("refused without RateLimit or Retry-After: %v", h)
	}
	if c.RetryAfter != [2]int{} {
		ra, err := strconv.Atoi(h.Get(rules.HeaderRetryAfter))
		if err != nil || ra < c.RetryAfter[0] || ra > c.RetryAfter[1] {
			t.Errorf("refused with Retry-After %q, want %d to %d", h.Get(rules.HeaderRetryAfter), c.RetryAfter[0], c.RetryAfter[1])
		}
	}
	if fe.GRPC {
		if resp.StatusCode != http.StatusOK || grpcStatus(resp) != "8" {
			t.Errorf("refused gRPC call: %d grpc-status %q, want 200 and 8", resp.StatusCode, grpcStatus(resp))
		}
		return
	}
	if resp.StatusCode != http.StatusTooManyRequests || h.Get("Content-Type") != rules.ContentTypeProblem ||
		h.Get("X-Content-Type-Options") != "nosniff" || h.Get(rules.HeaderCacheControl) != "no-store" {
		t.Errorf("refused: %d %v, want 429, problem+json, nosniff, no-store", resp.StatusCode, h)
	}
	if method == http.MethodHead && len(body) != 0 || method != http.MethodHead && !strings.Contains(string(body), `"violated-policies":["per-ip"]`) {
		t.Errorf("refused %s: body %q", method, body)
	}
}

func grpcStatus(resp *http.Response) string {
	if v := resp.Header.Get("Grpc-Status"); v != "" {
		return v
	}
	return resp.Trailer.Get("Grpc-Status")
}
