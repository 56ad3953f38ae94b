package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"
)

// Transport is an http.RoundTripper that paces requests by the server's
// rate-limit fields, honours Retry-After and retries with jittered
// exponential backoff. Make one with [New]; it is safe for concurrent use.
type Transport struct {
	cfg   Config
	pacer *pacer
}

// New returns a Transport configured by cfg, or the problems of cfg.
func New(cfg Config) (*Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Transport{cfg: cfg, pacer: newPacer(cfg.MaxHosts)}, nil
}

// NewClient returns an *http.Client whose Transport is New(cfg). Set the
// client's Timeout, or give each request a context deadline, to bound the
// total time spent including waits.
func NewClient(cfg Config) (*http.Client, error) {
	t, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: t}, nil
}

// ErrWaitTooLong is wrapped by a WaitError when the wait before a request
// to a host exceeds Config.MaxWait.
var ErrWaitTooLong = errors.New("client: server asks to wait longer than MaxWait")

// WaitError reports a request that was not sent (or not sent again)
// because the wait before it would outlast the request context's deadline
// (it unwraps to context.DeadlineExceeded), or Config.MaxWait (it unwraps
// to ErrWaitTooLong).
type WaitError struct {
	// Host is the host:port the request was for.
	Host string
	// Wait is how long the request would have had to wait: the server's
	// Retry-After or reset when it gave one, else the backoff.
	Wait time.Duration
	// FromServer reports whether Wait was stated by the server
	// (Retry-After or a spent RateLimit allowance) rather than computed.
	FromServer bool
	// StatusCode is the status of the response that asked for the wait;
	// zero when the wait came from pacing or a transport error, or for a
	// gRPC call (client/grpcretry).
	StatusCode int
	// Attempts is how many times the request was sent.
	Attempts int
	// Err is context.DeadlineExceeded or ErrWaitTooLong.
	Err error

	refused bool // a refusal asked for the wait (RetryJitter applies)
}

// Error describes the wait and why it was not taken.
func (e *WaitError) Error() string {
	what := "backoff"
	if e.FromServer {
		what = "server asks to wait"
	}
	s := fmt.Sprintf("client: %s: %s %v after %d attempt(s)", e.Host, what, e.Wait, e.Attempts)
	if e.StatusCode != 0 {
		s += " (status " + strconv.Itoa(e.StatusCode) + ")"
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns Err.
func (e *WaitError) Unwrap() error { return e.Err }

// maxDrain bounds how much of a refused response's body is read so that
// its connection can be reused.
const maxDrain = 64 << 10

// RoundTrip sends req, waiting and retrying as the package documentation
// describes. The last response is returned as is when retries run out, when
// the status is not retried, or when the server asks for a wait longer
// than MaxWait. Responses that are retried are drained and closed.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := &t.cfg
	ctx := req.Context()
	host := hostKey(req.URL)
	rewindable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	idem := idempotent(req)

	var prev time.Duration // previous backoff, for DecorrelatedJitter
	retries := 0           // backoff exponent: retries without a server hint
	for attempt := 1; ; attempt++ {
		if err := t.acquire(ctx, host, attempt-1); err != nil {
			if attempt == 1 {
				closeBody(req)
			}
			return nil, err
		}

		out := req
		if attempt > 1 {
			var err error
			if out, err = rewind(req); err != nil {
				t.pacer.done(host, Allowance{}, false, c.Now())
				return nil, err
			}
		}
		resp, err := c.Transport.RoundTrip(out)
		now := c.Now()

		var (
			wait       time.Duration
			fromServer bool
			status     int
		)
		ra, hasRA := t.observe(host, resp, now)
		if err != nil {
			if ctx.Err() != nil || !rewindable || !idem || attempt >= c.MaxAttempts {
				return nil, err
			}
			wait = backoff(c.Strategy, c.BaseDelay, c.MaxDelay, retries, prev, c.Rand)
			prev, retries = wait, retries+1
		} else {
			if !retryable(resp.StatusCode, rewindable, idem) || attempt >= c.MaxAttempts {
				return resp, nil
			}
			status = resp.StatusCode
			if hasRA {
				if ra > c.MaxWait {
					return resp, nil
				}
				wait, fromServer = ra, true
			} else {
				wait = backoff(c.Strategy, c.BaseDelay, c.MaxDelay, retries, prev, c.Rand)
				prev, retries = wait, retries+1
			}
			drain(resp)
		}
		werr := &WaitError{Host: host, Wait: wait, FromServer: fromServer, StatusCode: status, Attempts: attempt}
		if err := t.pause(ctx, werr); err != nil {
			return nil, err
		}
	}
}

// pause waits werr.Wait before the next attempt, plus, for a
// server-directed wait, up to Config.RetryJitter (after a Retry-After)
// or Config.PaceJitter (for a spent allowance) more. It returns werr,
// completed, at once instead when a server-directed wait exceeds MaxWait or
// when the wait would reach the context's deadline; jitter is only added
// within what the deadline leaves.
func (t *Transport) pause(ctx context.Context, werr *WaitError) error {
	c := &t.cfg
	d := werr.Wait
	if werr.FromServer && d > c.MaxWait {
		werr.Err = ErrWaitTooLong
		return werr
	}
	var extra time.Duration
	if werr.FromServer {
		j := c.PaceJitter
		if werr.StatusCode != 0 || werr.refused {
			j = c.RetryJitter
		}
		extra = uniform(c.Rand, j)
	}
	if dl, ok := ctx.Deadline(); ok {
		left := dl.Sub(c.Now())
		if d >= left {
			werr.Err = context.DeadlineExceeded
			return werr
		}
		extra = min(extra, (left-d)/2)
	}
	return c.Sleep(ctx, addWait(d, extra))
}

// addWait returns the wait d plus the jitter extra, saturating at the
// largest time.Duration: a server may ask for nearly that long (a huge
// Retry-After with MaxWait unbounded), and a sum that wrapped to a negative
// wait would send the next attempt at once. It is never negative.
func addWait(d, extra time.Duration) time.Duration {
	d, extra = max(d, 0), max(extra, 0)
	if extra > math.MaxInt64-d {
		return math.MaxInt64
	}
	return d + extra
}

// observe ends a request in the pacer, recording the host's rate-limit
// state from resp (nil after a transport error), and returns its valid
// Retry-After on 429 and 503. Retry-After takes precedence over the
// RateLimit fields; a response served from a cache (Age > 0) says
// nothing.
func (t *Transport) observe(host string, resp *http.Response, now time.Time) (time.Duration, bool) {
	if resp == nil {
		t.pacer.done(host, Allowance{}, false, now)
		return 0, false
	}
	if age, ok := singleDigits(resp.Header["Age"]); ok && age > 0 {
		t.pacer.done(host, Allowance{}, false, now)
		return 0, false
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		if ra, ok := retryAfter(resp.Header, now); ok {
			t.pacer.holdUntil(host, now.Add(ra), now)
			t.pacer.done(host, Allowance{}, false, now)
			return ra, true
		}
	}
	a, ok := ParseAllowance(resp.Header, now)
	t.pacer.done(host, a, ok, now)
	return 0, false
}

// maxPacingWaits bounds the waits for one attempt, in case an injected
// Sleep does not move the injected clock.
const maxPacingWaits = 100

// acquire waits until the pacer lets a request to host go, or fails at
// once with a WaitError when the wait exceeds MaxWait or would reach ctx's
// deadline. sent is how many times the request was sent already.
func (t *Transport) acquire(ctx context.Context, host string, sent int) error {
	c := &t.cfg
	for range maxPacingWaits {
		wait := t.pacer.acquire(host, c.Now())
		if wait == 0 {
			return nil
		}
		werr := &WaitError{Host: host, Wait: wait, FromServer: true, Attempts: sent}
		if err := t.pause(ctx, werr); err != nil {
			return err
		}
	}
	t.pacer.force(host, c.Now())
	return nil
}

// retryable reports whether a response with status code is retried: 429
// and 503 say the server did not act on the request, so any request whose
// body can be sent again is retried; after 502 and 504 the server may have
// acted, so the method must also be idempotent.
func retryable(code int, rewindable, idem bool) bool {
	switch code {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return rewindable
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		return rewindable && idem
	}
	return false
}

// idempotent reports whether req may be repeated without changing its
// effect (RFC 9110 §9.2.2), or carries an idempotency key as net/http
// honours.
func idempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	_, ok := req.Header["Idempotency-Key"]
	if !ok {
		_, ok = req.Header["X-Idempotency-Key"]
	}
	return ok
}

// rewind returns a copy of req with a fresh body for another attempt.
func rewind(req *http.Request) (*http.Request, error) {
	out := req.Clone(req.Context())
	if req.Body == nil || req.Body == http.NoBody {
		return out, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, fmt.Errorf("client: rewinding request body: %w", err)
	}
	out.Body = body
	return out, nil
}

// drain reads what is left of a refused response (up to maxDrain) and
// closes it, so its connection can be reused.
func drain(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, maxDrain)
	_ = resp.Body.Close()
}

// closeBody closes the body of a request that is never sent, as the
// RoundTripper contract requires.
func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
