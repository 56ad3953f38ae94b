package limit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// FuzzDecide drives every algorithm with arbitrary parameters, times and
// costs (including time going backwards and values near the int64 limits)
// and checks the invariants every decision keeps: no panic, no negative
// numbers, a refusal never changes state, and an allowed request has no
// retry-after.
func FuzzDecide(f *testing.F) {
	f.Add(int64(10), int64(1_000_000_000), int64(5), int64(0), int64(1), int64(3), int64(1))
	f.Add(int64(1), int64(1), int64(0), int64(-5), int64(1<<62), int64(-1<<62), int64(1<<40))
	f.Add(int64(1<<62), int64(1<<62), int64(1<<62), int64(1<<62), int64(1<<62), int64(1<<62), int64(1<<62))
	f.Fuzz(func(t *testing.T, count, period, burst, t0, t1, t2, cost int64) {
		if cost < 0 {
			cost = -cost
		}
		if cost < 0 {
			return
		}
		rate := limit.Per(count, time.Duration(period))
		pols := []limit.Policy{
			limit.TokenBucket{Rate: rate, Burst: burst},
			limit.LeakyBucket{Rate: rate, Burst: burst, Mode: limit.Shape, Delay: burst / 2},
			limit.LeakyBucket{Rate: rate, Burst: burst, Mode: limit.Police},
			limit.FixedWindow{Limit: count, Window: time.Duration(period)},
			limit.SlidingWindow{Limit: count, Window: time.Duration(period)},
			limit.SlidingLog{Limit: count, Window: time.Duration(period)},
		}
		for _, p := range pols {
			if p.Validate() != nil {
				continue
			}
			var st limit.State
			var log limit.Log
			for _, now := range []int64{t0, t1, t2, t1} {
				var d limit.Decision
				switch p := p.(type) {
				case limit.Stateful:
					next, dd := p.Decide(st, now, cost)
					if !dd.Allowed && next != st {
						t.Fatalf("%v: refusal changed state %+v -> %+v", p, st, next)
					}
					st, d = next, dd
				case limit.Logged:
					before := log.Sum()
					d = p.DecideLog(&log, now, cost)
					if !d.Allowed && log.Sum() > before {
						t.Fatalf("%v: refusal charged the log", p)
					}
				}
				checkDecision(t, p, st, &log, now, cost, d)
			}
		}
	})
}

// checkDecision checks the invariants of d, decided for a request of cost
// at now under p, which left the state st (or the log): no negative
// figure, a retry-after exactly when refused, and, with nothing left, a
// NextUnitAfter equal to what a unit request would be told now (zero
// otherwise).
func checkDecision(t *testing.T, p limit.Policy, st limit.State, log *limit.Log, now, cost int64, d limit.Decision) {
	t.Helper()
	if d.Remaining < 0 || d.RetryAfter < 0 || d.ResetAfter < 0 || d.Delay < 0 || d.NextUnitAfter < 0 {
		t.Fatalf("%v at %d cost %d: negative field in %+v", p, now, cost, d)
	}
	if d.Allowed && d.RetryAfter != 0 {
		t.Fatalf("%v: allowed with retry-after %v", p, d.RetryAfter)
	}
	if !d.Allowed && d.RetryAfter == 0 {
		t.Fatalf("%v at %d cost %d: refused with no retry-after: %+v", p, now, cost, d)
	}
	var unit limit.Decision
	switch p := p.(type) {
	case limit.Stateful:
		_, unit = p.Decide(st, now, 1)
	case limit.Logged:
		unit = p.DecideLog(log, now, 1)
		if unit.Allowed {
			log.Rollback()
		}
	}
	if (d.Remaining == 0) != !unit.Allowed || d.NextUnitAfter != unit.RetryAfter {
		t.Fatalf("%v at %d cost %d: %+v, but a unit request now gets %+v", p, now, cost, d, unit)
	}
}

// FuzzDecideAnyState starts every fixed-size algorithm from an arbitrary
// state: one another policy left under the same key, one charged beyond
// its capacity by a sync (the eventual tier adds admissions made
// elsewhere unconditionally), one from a clock far ahead. Every decision
// keeps the invariants of FuzzDecide, and a zero-cost check never reports
// a negative Remaining.
func FuzzDecideAnyState(f *testing.F) {
	base := int64(1_767_225_600_000_000_000)
	f.Add(int64(10), int64(1_000_000_000), int64(20), base+5_000_000_000, int64(0), base+5_000_000_000, base, int64(0))
	f.Add(int64(20), int64(1_000_000_000), int64(0), base/1_000_000_000, int64(50), base+1_000_000_000, base, int64(0))
	f.Add(int64(20), int64(1_000_000_000), int64(4), int64(50), int64(50), base+2_000_000_000, base, int64(1))
	f.Add(int64(10), int64(1_000_000_000), int64(20), int64(5_000_000_000), base, base+5_100_000_000, base, int64(0))
	f.Fuzz(func(t *testing.T, count, period, burst, a, b, idle, now, cost int64) {
		if cost < 0 {
			cost = -cost
		}
		if cost < 0 {
			return
		}
		rate := limit.Per(count, time.Duration(period))
		st := limit.State{A: a, B: b, Idle: idle}
		for _, p := range []limit.Stateful{
			limit.TokenBucket{Rate: rate, Burst: burst},
			limit.LeakyBucket{Rate: rate, Burst: burst, Mode: limit.Shape, Delay: burst / 2},
			limit.FixedWindow{Limit: count, Window: time.Duration(period)},
			limit.SlidingWindow{Limit: count, Window: time.Duration(period)},
		} {
			if p.Validate() != nil {
				continue
			}
			next, d := p.Decide(st, now, cost)
			if (!d.Allowed || cost == 0) && next != st {
				t.Fatalf("%v: a refusal or a peek changed the state %+v -> %+v", p, st, next)
			}
			checkDecision(t, p, next, nil, now, cost, d)
		}
	})
}

// FuzzParseRate feeds arbitrary text to the parsers that read
// configuration (ParseRate, ParsePeriod, ParseAlgorithm): an error wrapping
// the package's sentinel, never a panic; and whatever parses is valid and
// reads back the same from its String.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{
		"100/s", "5000/h", "7/90s", "5/250ms", "10r/s", " 3 / 1m30s ", "1/7d", "60/minute",
		"1/µs", "1/1.5h", "+5/+2d", "1/106751d", "9223372036854775807/2562047h", "token_bucket",
		"", "/", "0/s", "-1/s", "1/-0d", "1/0.0000000001s", "1e3/s", "10/xyz", "2000000000/ns",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r, err := limit.ParseRate(s); err != nil {
			if !errors.Is(err, limit.ErrInvalidRate) {
				t.Fatalf("ParseRate(%q): %v does not wrap ErrInvalidRate", s, err)
			}
		} else {
			if err := r.Validate(); err != nil {
				t.Fatalf("ParseRate(%q) = %v, invalid: %v", s, r, err)
			}
			if back, err := limit.ParseRate(r.String()); err != nil || back != r {
				t.Fatalf("ParseRate(%q) = %v; its String %q reads back as %v, %v", s, r, r.String(), back, err)
			}
		}
		if d, err := limit.ParsePeriod(s); err == nil {
			if d <= 0 {
				t.Fatalf("ParsePeriod(%q) = %v, not positive", s, d)
			}
			// One per period: Rate.String writes the period as
			// ParsePeriod reads it.
			r := limit.Per(1, d)
			if back, err := limit.ParseRate(r.String()); err != nil || back != r {
				t.Fatalf("ParsePeriod(%q) = %v; %q reads back as %v, %v", s, d, r.String(), back, err)
			}
		}
		if a, err := limit.ParseAlgorithm(s); err != nil {
			if !errors.Is(err, limit.ErrUnknownAlgorithm) {
				t.Fatalf("ParseAlgorithm(%q): %v does not wrap ErrUnknownAlgorithm", s, err)
			}
		} else if a.String() != s {
			t.Fatalf("ParseAlgorithm(%q) = %v", s, a)
		}
	})
}
