package redis

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// deadlines hands out timeout contexts cheaply: callers that start within
// the same slice of time (a tenth of the timeout) share one context whose
// deadline is the timeout after the slice's end. A decision's timeout is so
// between Timeout and 1.1×Timeout, for one context and timer per slice
// instead of one per decision (context.WithTimeout cost the 64-caller
// benchmark a tenth of its throughput).
type deadlines struct {
	timeout, slice time.Duration
	base           time.Time
	mu             sync.Mutex
	cur            atomic.Pointer[deadlineSlice]
}

type deadlineSlice struct {
	ctx    context.Context
	cancel context.CancelFunc // released by the deadline itself
	end    time.Duration      // since base: the slice's end
}

func newDeadlines(timeout time.Duration) *deadlines {
	return &deadlines{timeout: timeout, slice: max(timeout/10, time.Microsecond), base: time.Now()}
}

// with returns a context that ends within the timeout (plus a slice) from
// now, and its cancel function. A caller context with a Done channel (one
// that can be cancelled) gets its own context.WithTimeout.
func (d *deadlines) with(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Done() != nil {
		return context.WithTimeout(ctx, d.timeout)
	}
	now := time.Since(d.base)
	if s := d.cur.Load(); s != nil && now < s.end {
		return s.ctx, noCancel
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.cur.Load(); s != nil && now < s.end {
		return s.ctx, noCancel
	}
	end := now + d.slice
	// Background, not the caller's context: the slice is shared, and a
	// caller's context (a fasthttp RequestCtx, reused after its request)
	// must not be read when the deadline fires.
	c, cancel := context.WithTimeout(context.Background(), end-now+d.timeout)
	d.cur.Store(&deadlineSlice{ctx: c, cancel: cancel, end: end})
	return c, noCancel
}

func noCancel() {}
