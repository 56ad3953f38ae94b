package client

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// fakeClock is an injected clock: Sleep moves it forward at once and
// records the wait, so timing is checked exactly and nothing really sleeps.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now().Truncate(time.Second)} }

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// UnixNano is the same clock in the form store/memory takes.
func (f *fakeClock) UnixNano() int64 { return f.Now().UnixNano() }

func (f *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	f.slept = append(f.slept, d)
	return nil
}

func (f *fakeClock) Sleeps() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.slept...)
}

// config returns a Config driven by f with no jitter on server-directed
// waits and the smallest random draws, unless the caller overrides them.
func (f *fakeClock) config() Config {
	return Config{Now: f.Now, Sleep: f.Sleep, Rand: rndMin, RetryJitter: -1, PaceJitter: -1}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
