// Package ctxsleep is the one wait on a timer that a context can end
// early, shared by the client's pacing and retries and by httplimit's
// delays (and so forwardauth's). It is a leaf: it imports only the
// standard library.
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits d on a timer, or until ctx is done, and returns ctx.Err()
// in the latter case. A d of zero or less does not wait: it returns
// ctx.Err() at once (nil while ctx is live).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
