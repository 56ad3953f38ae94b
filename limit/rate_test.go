package limit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want limit.Rate
		str  string
	}{
		{"100/s", limit.Per(100, time.Second), "100/s"},
		{"5000/h", limit.Per(5000, time.Hour), "5000/h"},
		{"7/90s", limit.Per(7, 90*time.Second), "7/1m30s"},
		{"5/250ms", limit.Per(5, 250*time.Millisecond), "5/250ms"},
		{"10r/s", limit.Per(10, time.Second), "10/s"},
		{"30r/m", limit.Per(30, time.Minute), "30/m"},
		{" 3 / 1m30s ", limit.Per(3, 90*time.Second), "3/1m30s"},
		{"1/7d", limit.Per(1, 7*24*time.Hour), "1/7d"},
		{"60/minute", limit.Per(60, time.Minute), "60/m"},
		{"2/2h", limit.Per(2, 2*time.Hour), "2/2h"},
	} {
		got, err := limit.ParseRate(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			continue
		}
		if got.String() != tc.str {
			t.Errorf("%v.String() = %q; want %q", got, got.String(), tc.str)
		}
		if back, err := limit.ParseRate(got.String()); err != nil || back != got {
			t.Errorf("round trip of %q: %v, %v", got.String(), back, err)
		}
	}
	for _, bad := range []string{"", "10", "0/s", "-1/s", "x/s", "10/", "10/xyz", "10/0s", "10/-1s", "2000000000/ns", "1/0d", "99999999999999999999/s"} {
		if r, err := limit.ParseRate(bad); err == nil || !errors.Is(err, limit.ErrInvalidRate) {
			t.Errorf("ParseRate(%q) = %v, %v; want an ErrInvalidRate", bad, r, err)
		}
	}
}

func TestValidate(t *testing.T) {
	sec := time.Second
	for _, p := range []limit.Policy{
		limit.TokenBucket{},
		limit.TokenBucket{Rate: limit.Per(0, sec)},
		limit.TokenBucket{Rate: limit.Per(1, -sec)},
		limit.TokenBucket{Rate: limit.Per(1, sec), Burst: -1},
		limit.FixedWindow{Limit: 0, Window: sec},
		limit.FixedWindow{Limit: 1},
		limit.SlidingWindow{Limit: -1, Window: sec},
		limit.SlidingLog{Limit: limit.MaxLogLimit + 1, Window: sec},
		limit.LeakyBucket{Rate: limit.Per(1, sec), Burst: 1, Delay: 2},
		limit.LeakyBucket{Rate: limit.Per(1, sec), Burst: -1},
		limit.LeakyBucket{Rate: limit.Per(1, sec), Mode: 7},
		// Spans past MaxSpan would saturate the nanosecond arithmetic
		// and stop limiting.
		limit.TokenBucket{Rate: limit.Per(1, 24*time.Hour), Burst: 100_000},
		limit.LeakyBucket{Rate: limit.Per(1, 24*time.Hour), Burst: 200_000, Mode: limit.Police},
		limit.SlidingWindow{Limit: 1, Window: 60_000 * 24 * time.Hour},
		limit.FixedWindow{Limit: 1, Window: limit.MaxSpan + 1},
		limit.SlidingLog{Limit: 1, Window: limit.MaxSpan + 1},
	} {
		if err := p.Validate(); !errors.Is(err, limit.ErrInvalidPolicy) {
			t.Errorf("%#v.Validate() = %v; want ErrInvalidPolicy", p, err)
		}
	}
	for _, p := range []limit.Policy{
		limit.TokenBucket{Rate: limit.Per(1, sec)},
		limit.FixedWindow{Limit: 1, Window: sec},
		limit.SlidingWindow{Limit: 1, Window: sec},
		limit.SlidingLog{Limit: limit.MaxLogLimit, Window: sec},
		limit.FixedWindow{Limit: 1, Window: limit.MaxSpan},
		limit.TokenBucket{Rate: limit.Per(1, 24*time.Hour), Burst: 36_500},
		limit.LeakyBucket{Rate: limit.Per(10, sec), Burst: 5, Delay: 3},
	} {
		if err := p.Validate(); err != nil {
			t.Errorf("%v.Validate() = %v", p, err)
		}
	}
}

func TestParseAlgorithm(t *testing.T) {
	for _, a := range []limit.Algorithm{limit.AlgFixedWindow, limit.AlgSlidingLog, limit.AlgSlidingWindow, limit.AlgTokenBucket, limit.AlgLeakyBucket} {
		got, err := limit.ParseAlgorithm(a.String())
		if err != nil || got != a {
			t.Errorf("ParseAlgorithm(%q) = %v, %v", a.String(), got, err)
		}
	}
	if _, err := limit.ParseAlgorithm("gcra"); !errors.Is(err, limit.ErrUnknownAlgorithm) {
		t.Errorf("ParseAlgorithm(gcra) = %v", err)
	}
}

func TestMerge(t *testing.T) {
	a := limit.Decision{Allowed: true, Remaining: 5, ResetAfter: time.Second, Index: 0}
	b := limit.Decision{Allowed: true, Remaining: 2, ResetAfter: time.Second, Delay: time.Millisecond, Index: 1}
	c := limit.Decision{Allowed: false, RetryAfter: time.Second, Index: 2}
	d := limit.Decision{Allowed: false, RetryAfter: time.Minute, Index: 3}
	if m := limit.Merge(a, b); !m.Allowed || m.Index != 1 || m.Delay != time.Millisecond {
		t.Errorf("Merge(a, b) = %+v; want b's numbers with b's delay", m)
	}
	if m := limit.Merge(limit.Merge(b, c), a); m.Allowed || m.Index != 2 || m.Delay != time.Millisecond {
		t.Errorf("refusal must win and keep the longest delay: %+v", m)
	}
	if m := limit.Merge(c, d); m.Index != 3 {
		t.Errorf("longer retry-after must win: %+v", m)
	}
	// Both with nothing left: the one whose next unit is further away is
	// what a client must wait for, whatever their full resets.
	e := limit.Decision{Allowed: true, NextUnitAfter: time.Second, ResetAfter: time.Minute, Index: 4}
	f := limit.Decision{Allowed: true, NextUnitAfter: 5 * time.Second, ResetAfter: 10 * time.Second, Index: 5}
	if m := limit.Merge(e, f); m.Index != 5 {
		t.Errorf("longer next unit must win over a longer reset: %+v", m)
	}
}

func TestPolicyStrings(t *testing.T) {
	for _, tc := range []struct {
		p    limit.Policy
		want string
	}{
		{limit.FixedWindow{Limit: 10, Window: time.Minute}, "fixed_window(limit=10, window=1m)"},
		{limit.SlidingWindow{Limit: 7, Window: 90 * time.Second}, "sliding_window(limit=7, window=1m30s)"},
		{limit.SlidingLog{Limit: 5, Window: 24 * time.Hour}, "sliding_log(limit=5, window=1d)"},
		{limit.TokenBucket{Rate: limit.Per(100, time.Minute), Burst: 20}, "token_bucket(rate=100/m, burst=20)"},
		{limit.LeakyBucket{Rate: limit.Per(10, time.Second), Burst: 5, Delay: 3}, "leaky_bucket(rate=10/s, burst=5, mode=shape, delay=3)"},
		{limit.LeakyBucket{Rate: limit.Per(10, time.Second), Burst: 5, Mode: limit.Police}, "leaky_bucket(rate=10/s, burst=5, mode=police)"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("String() = %q; want %q", got, tc.want)
		}
	}
}

// TestForeignStateIsAbsent is the regression test for a policy changed
// under the same key (a reload that turns a 1m window into 1h, or a token
// bucket into a window): the old state must not be read as a window far in
// the future, which left the key refused, and never expiring, for years.
func TestForeignStateIsAbsent(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC).UnixNano()
	minute := limit.FixedWindow{Limit: 5, Window: time.Minute}
	st, _ := minute.Decide(limit.State{}, now, 5)
	hour := limit.FixedWindow{Limit: 5, Window: time.Hour}
	next, d := hour.Decide(st, now, 1)
	if !d.Allowed || d.ResetAfter > time.Hour || next.Idle > now+int64(time.Hour) {
		t.Fatalf("a 1m window's state read by a 1h window: %+v, next %+v", d, next)
	}
	tb, _ := limit.TokenBucket{Rate: limit.Per(1, time.Second), Burst: 5}.Decide(limit.State{}, now, 5)
	for _, p := range []limit.Stateful{hour, limit.SlidingWindow{Limit: 5, Window: time.Hour}} {
		if _, d := p.Decide(tb, now, 1); !d.Allowed || d.Remaining != 4 {
			t.Errorf("%v reading a token bucket's state: %+v; want a fresh key", p, d)
		}
	}
}

// TestStateWithNegativeCountsIsAbsent: no algorithm writes a negative
// count, so a window state holding one (a corrupted or hand-written Redis
// key) is a fresh key, not a count that makes Remaining exceed the limit.
func TestStateWithNegativeCountsIsAbsent(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC).UnixNano()
	min := int64(time.Minute)
	idx := now / min
	for _, c := range []struct {
		p  limit.Stateful
		st limit.State
	}{
		{limit.FixedWindow{Limit: 5, Window: time.Minute}, limit.State{A: idx, B: -100, Idle: (idx + 1) * min}},
		{limit.SlidingWindow{Limit: 5, Window: time.Minute}, limit.State{A: -100, B: 2, Idle: (idx + 2) * min}},
		{limit.SlidingWindow{Limit: 5, Window: time.Minute}, limit.State{A: 1, B: -1 << 62, Idle: (idx + 2) * min}},
	} {
		if _, d := c.p.Decide(c.st, now, 1); !d.Allowed || d.Remaining != 4 {
			t.Errorf("%v reading %+v: %+v; want a fresh key", c.p, c.st, d)
		}
	}
}
