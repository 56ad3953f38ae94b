package client

import (
	"context"
	"time"
)

// Retrier schedules the retries of one call the way the Transport does,
// for callers that are not HTTP requests (client/grpcretry's gRPC
// interceptors): a server-directed wait is honoured up to MaxWait with up
// to RetryJitter added, other retries back off exponentially with the
// configured jitter, and no wait outlasts the context's deadline. Get one
// per call from [Config.Retrier]; it is not safe for concurrent use.
type Retrier struct {
	c       Config
	prev    time.Duration // previous backoff, for DecorrelatedJitter
	retries int           // backoff exponent: retries without a server hint
	attempt int           // attempts made so far
}

// Retrier returns a Retrier for one call, or the problems of c.
func (c Config) Retrier() (*Retrier, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &Retrier{c: c.withDefaults()}, nil
}

// Attempted records one more attempt and reports whether another one
// may follow it (fewer than MaxAttempts made).
func (r *Retrier) Attempted() bool {
	r.attempt++
	return r.attempt < r.c.MaxAttempts
}

// Wait waits before the next attempt: server (plus up to RetryJitter)
// when fromServer, else the next backoff. It returns a *WaitError
// without waiting when the server's wait exceeds MaxWait (wrapping
// ErrWaitTooLong) or the wait would reach ctx's deadline (wrapping
// context.DeadlineExceeded), and ctx's error if ctx ends while it waits.
// host names the server in the WaitError.
func (r *Retrier) Wait(ctx context.Context, host string, server time.Duration, fromServer bool) error {
	wait := server
	if !fromServer {
		wait = backoff(r.c.Strategy, r.c.BaseDelay, r.c.MaxDelay, r.retries, r.prev, r.c.Rand)
		r.prev, r.retries = wait, r.retries+1
	}
	werr := &WaitError{Host: host, Wait: wait, FromServer: fromServer, Attempts: r.attempt, refused: true}
	t := Transport{cfg: r.c}
	return t.pause(ctx, werr)
}
