package memory

import (
	"sync"
	"sync/atomic"
	"time"
)

// NewClock returns a clock reading Unix nanoseconds through the monotonic
// clock from one wall-clock reading taken now: cheaper than time.Now on
// every call, and it never goes backwards. It does not follow later steps
// of the system clock.
func NewClock() func() int64 {
	base := time.Now()
	wall := base.UnixNano()
	return func() int64 { return wall + int64(time.Since(base)) }
}

// CoarseClock is a cached clock, as nginx reads its event loop's cached
// millisecond clock instead of asking the kernel for every request: a
// goroutine refreshes it every Resolution, and reading it is one atomic
// load. On machines where reading the clock is slow (about 30–50 ns on
// this project's virtual machines, a third of a decision), it is the
// cheaper choice; decisions then see time in steps of Resolution, which
// every algorithm handles exactly (they never assume time moves). When
// that goroutine is kept from running, the cached time lags further: pass
// Refresh as the store's Config.Recheck. Close stops the goroutine.
type CoarseClock struct {
	now        atomic.Int64
	precise    func() int64
	resolution int64 // nanoseconds
	stop       chan struct{}
	done       chan struct{}
	once       sync.Once
}

// NewCoarseClock starts a clock refreshed every resolution (at least 100µs;
// zero means 1ms).
func NewCoarseClock(resolution time.Duration) *CoarseClock {
	if resolution == 0 {
		resolution = time.Millisecond
	}
	resolution = max(resolution, 100*time.Microsecond)
	c := &CoarseClock{stop: make(chan struct{}), done: make(chan struct{}), precise: NewClock(), resolution: int64(resolution)}
	c.now.Store(c.precise())
	go func() {
		defer close(c.done)
		t := time.NewTicker(resolution)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				c.tick()
			}
		}
	}()
	return c
}

// tick stores the real time, unless a Refresh got further meanwhile.
func (c *CoarseClock) tick() {
	t := c.precise()
	for {
		old := c.now.Load()
		if old >= t || c.now.CompareAndSwap(old, t) {
			return
		}
	}
}

// Now returns the cached time in Unix nanoseconds. It never goes backwards.
func (c *CoarseClock) Now() int64 { return c.now.Load() }

// Refresh reads the real clock and returns it. When the cached time lags
// it by more than the resolution (its goroutine kept from running: on a
// loaded machine, 10 ms and more was seen), the cache catches up, unless
// another reader got further meanwhile. A store passes it as
// Config.Recheck, so that a request about to be refused is decided at the
// real time. While the goroutine keeps time, Refresh writes nothing: a
// flood of refusals must not make every decision's read of the cache
// contend with a write.
func (c *CoarseClock) Refresh() int64 {
	t := c.precise()
	for {
		old := c.now.Load()
		if t-old <= c.resolution {
			return max(t, old)
		}
		if c.now.CompareAndSwap(old, t) {
			return t
		}
	}
}

// Close stops the refreshing goroutine; Now then returns the last time
// read. Safe to call more than once.
func (c *CoarseClock) Close() error {
	c.once.Do(func() { close(c.stop) })
	<-c.done
	return nil
}
