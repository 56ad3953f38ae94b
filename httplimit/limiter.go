package httplimit

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/rules"
)

// Config configures a Limiter. The zero Config is ready to use.
type Config struct {
	// Wait blocks for d or until ctx is done, returning ctx.Err() in the
	// latter case. Nil means a real timer. Tests inject a fake one so
	// that no test sleeps.
	Wait func(ctx context.Context, d time.Duration) error
	// OnDelayCancelled, when set, is called when a client goes away while
	// its request is being delayed (the request is then not served).
	OnDelayCancelled func(r *http.Request, waited time.Duration)
}

// Limiter applies a rules.Engine to net/http requests. It is safe for
// concurrent use.
type Limiter struct {
	engine atomic.Pointer[rules.Engine]
	cfg    Config
}

// New returns a Limiter over e.
func New(e *rules.Engine, cfg Config) *Limiter {
	l := &Limiter{cfg: cfg}
	l.engine.Store(e)
	return l
}

// Swap replaces the engine for requests that start from now on.
func (l *Limiter) Swap(e *rules.Engine) { l.engine.Store(e) }

// Handler returns next wrapped by the limiter: the standard middleware
// shape, func(http.Handler) http.Handler.
func (l *Limiter) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
	})
}
