package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/tollgate-dev/tollgate/internal/ctxsleep"
)

// Defaults used for zero Config fields.
const (
	DefaultMaxAttempts = 5
	DefaultBaseDelay   = 100 * time.Millisecond
	DefaultMaxDelay    = 10 * time.Second
	DefaultMaxWait     = time.Minute
	DefaultMaxHosts    = 1024
	DefaultRetryJitter = time.Second
)

// Config configures a [Transport]. The zero Config is ready to use: every
// zero field takes the documented default. A Config is copied by [New];
// changing it afterwards has no effect.
type Config struct {
	// Transport sends the requests. Nil means http.DefaultTransport.
	Transport http.RoundTripper

	// MaxAttempts is the most times one request is sent, the first try
	// included. Zero means DefaultMaxAttempts (5); 1 disables retries
	// (pacing still applies).
	MaxAttempts int

	// BaseDelay is the backoff base: the n-th retry (n counted from 0)
	// waits up to min(MaxDelay, BaseDelay·2^n). Zero means
	// DefaultBaseDelay (100ms).
	BaseDelay time.Duration
	// MaxDelay caps a computed backoff (not a server-directed wait). Zero
	// means DefaultMaxDelay (10s).
	MaxDelay time.Duration
	// Strategy chooses how backoff is jittered. The zero value is
	// FullJitter.
	Strategy Strategy

	// MaxWait is the longest server-directed wait (Retry-After, or the
	// reset of a spent allowance) the Transport honours. A 429 or 503 that
	// asks for longer is returned to the caller as is, and a request to a
	// host whose allowance resets later than that fails at once with a
	// WaitError wrapping ErrWaitTooLong. Zero means DefaultMaxWait (1m).
	MaxWait time.Duration
	// RetryJitter is the most extra time, drawn uniformly from
	// [0, RetryJitter), added to a Retry-After wait, so that clients
	// refused together and told the same instant do not all return at it
	// (and are refused together again). Retry-After has a resolution of
	// one second, hence the default. Zero means DefaultRetryJitter (1s);
	// negative means none.
	RetryJitter time.Duration
	// PaceJitter is the same for a wait for the reset of a spent
	// allowance: a client that was not refused is on schedule, so the
	// spread is small. Zero means BaseDelay; negative means none.
	PaceJitter time.Duration

	// MaxHosts bounds the pacing table (hosts with a spent allowance
	// remembered at once). When full, the entry that resets soonest is
	// forgotten. Zero means DefaultMaxHosts (1024).
	MaxHosts int

	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx is done, returning ctx.Err() in the latter
	// case. Nil means a timer. Tests inject it with Now to run without
	// real waiting.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a uniform random integer in [0, n) for n > 0. It must
	// be safe for concurrent use. Nil means math/rand/v2.Int64N.
	Rand func(n int64) int64
}

// ErrInvalidConfig reports a Config that cannot work.
var ErrInvalidConfig = errors.New("client: invalid config")

// Validate reports every problem with c at once, or nil.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if c.MaxAttempts < 0 {
		bad("MaxAttempts %d is negative", c.MaxAttempts)
	}
	if c.BaseDelay < 0 {
		bad("BaseDelay %v is negative", c.BaseDelay)
	}
	if c.MaxDelay < 0 {
		bad("MaxDelay %v is negative", c.MaxDelay)
	}
	if c.MaxWait < 0 {
		bad("MaxWait %v is negative", c.MaxWait)
	}
	if c.MaxHosts < 0 {
		bad("MaxHosts %d is negative", c.MaxHosts)
	}
	if c.Strategy > NoJitter {
		bad("unknown Strategy %d", c.Strategy)
	}
	return errors.Join(errs...)
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.Transport == nil {
		c.Transport = http.DefaultTransport
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.BaseDelay == 0 {
		c.BaseDelay = DefaultBaseDelay
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = DefaultMaxDelay
	}
	if c.MaxWait == 0 {
		c.MaxWait = DefaultMaxWait
	}
	c.RetryJitter = orDefault(c.RetryJitter, DefaultRetryJitter)
	c.PaceJitter = orDefault(c.PaceJitter, c.BaseDelay)
	if c.MaxHosts == 0 {
		c.MaxHosts = DefaultMaxHosts
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Sleep == nil {
		c.Sleep = ctxsleep.Sleep
	}
	if c.Rand == nil {
		c.Rand = rand.Int64N
	}
	return c
}

// orDefault maps a zero jitter to def and a negative one to none.
func orDefault(j, def time.Duration) time.Duration {
	switch {
	case j == 0:
		return def
	case j < 0:
		return 0
	}
	return j
}
