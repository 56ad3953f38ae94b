package limit

import (
	"errors"
	"testing"
	"time"
)

func TestScale(t *testing.T) {
	cases := []struct {
		in       Policy
		permille int64
		want     Policy
	}{
		{FixedWindow{Limit: 100, Window: time.Minute}, 500, FixedWindow{Limit: 50, Window: time.Minute}},
		{FixedWindow{Limit: 3, Window: time.Minute}, 100, FixedWindow{Limit: 1, Window: time.Minute}},
		{SlidingWindow{Limit: 1000, Window: time.Second}, 333, SlidingWindow{Limit: 333, Window: time.Second}},
		{SlidingLog{Limit: 10, Window: time.Second}, 250, SlidingLog{Limit: 2, Window: time.Second}},
		{TokenBucket{Rate: Per(100, time.Second)}, 500, TokenBucket{Rate: Per(100, 2*time.Second), Burst: 50}},
		{TokenBucket{Rate: Per(10, time.Second), Burst: 20}, 300,
			TokenBucket{Rate: Per(10, 3333333334*time.Nanosecond), Burst: 6}},
		{LeakyBucket{Rate: Per(10, time.Second), Burst: 5, Delay: 2}, 500,
			LeakyBucket{Rate: Per(10, 2*time.Second), Burst: 2, Delay: 1}},
		{FixedWindow{Limit: 100, Window: time.Minute}, 1000, FixedWindow{Limit: 100, Window: time.Minute}},
	}
	for _, c := range cases {
		got, err := Scale(c.in, c.permille)
		if err != nil {
			t.Fatalf("Scale(%v, %d): %v", c.in, c.permille, err)
		}
		if got != c.want {
			t.Errorf("Scale(%v, %d) = %v, want %v", c.in, c.permille, got, c.want)
		}
		if q, b := got.Quota().Limit, c.in.Quota().Limit; q > b {
			t.Errorf("Scale(%v, %d): quota %d above the base's %d", c.in, c.permille, q, b)
		}
	}
}

func TestScaleRefuses(t *testing.T) {
	p := FixedWindow{Limit: 10, Window: time.Second}
	for _, pm := range []int64{0, -5, 1001} {
		if _, err := Scale(p, pm); !errors.Is(err, ErrInvalidPolicy) {
			t.Errorf("Scale(%d‰) = %v, want ErrInvalidPolicy", pm, err)
		}
	}
	// A bucket slowed past MaxSpan is refused, not wrapped around.
	slow := TokenBucket{Rate: Per(1, 90*365*24*time.Hour), Burst: 1}
	if _, err := Scale(slow, 1); err == nil {
		t.Error("a rate slowed past MaxSpan was accepted")
	}
}
