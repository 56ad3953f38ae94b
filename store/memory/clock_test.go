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
