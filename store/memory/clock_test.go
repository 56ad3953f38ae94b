package memory

import (
	"testing"
	"time"
)

func TestClocks(t *testing.T) {
	precise := NewClock()
	if d := precise() - time.Now().UnixNano(); d < -int64(time.Second) || d > int64(time.Second) {
		t.Fatalf("NewClock is %v off the wall clock", time.Duration(d))
	}
	c := NewCoarseClock(time.Millisecond)
	first := c.Now()
	if d := first - time.Now().UnixNano(); d < -int64(time.Second) || d > int64(time.Second) {
		t.Fatalf("CoarseClock is %v off the wall clock", time.Duration(d))
	}
	c.Close()
	c.Close()
	select {
	case <-c.done:
	default:
		t.Fatal("CoarseClock goroutine still running after Close")
	}
	if c.Now() < first {
		t.Fatal("CoarseClock went backwards")
	}
}

// Refresh returns the real time. It moves the cached time only when that
// lags by more than the resolution (the refreshing goroutine late), never
// back, and otherwise writes nothing.
func TestCoarseClockRefresh(t *testing.T) {
	real := int64(1_000_000_000)
	c := &CoarseClock{precise: func() int64 { return real }, resolution: int64(time.Millisecond)}
	c.now.Store(real)
	real += int64(500 * time.Microsecond) // within the resolution
	if r := c.Refresh(); r != real || c.Now() != real-int64(500*time.Microsecond) {
		t.Fatalf("Refresh %d, Now %d: want the real time returned and the cache left alone", r, c.Now())
	}
	real += int64(5 * time.Millisecond) // the goroutine is late
	if r := c.Refresh(); r != real || c.Now() != real {
		t.Fatalf("Refresh %d, Now %d: want the cache moved to the real time %d", r, c.Now(), real)
	}
	c.now.Store(real + int64(time.Second)) // another reader got further
	if r := c.Refresh(); r != real+int64(time.Second) || c.Now() != real+int64(time.Second) {
		t.Fatalf("Refresh %d, Now %d: the cache went back", r, c.Now())
	}
}
