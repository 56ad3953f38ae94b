package limit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rate is Count events per Period: "7 per 90s" is Rate{7, 90 * time.Second}.
// Any period length is allowed, not only whole seconds, minutes or hours.
// The zero Rate is invalid.
type Rate struct {
	Count  int64         // events per period; must be > 0
	Period time.Duration // length of the period; must be > 0
}

// Per returns the rate of count events per period.
func Per(count int64, period time.Duration) Rate { return Rate{Count: count, Period: period} }

// ErrInvalidRate reports a rate that is zero, negative or malformed.
var ErrInvalidRate = errors.New("invalid rate")

// Validate reports whether r can drive an algorithm: Count and Period must
// be positive, and one event may not take less than a nanosecond.
func (r Rate) Validate() error {
	switch {
	case r.Count <= 0:
		return fmt.Errorf("%w: count %d must be positive", ErrInvalidRate, r.Count)
	case r.Period <= 0:
		return fmt.Errorf("%w: period %v must be positive", ErrInvalidRate, r.Period)
	case int64(r.Period)/r.Count == 0:
		return fmt.Errorf("%w: %d per %v is faster than one event per nanosecond", ErrInvalidRate, r.Count, r.Period)
	}
	return nil
}

// Interval returns the emission interval Period/Count in nanoseconds,
// truncated: the time one unit of cost takes to refill. It is at least 1
// for a valid rate.
func (r Rate) Interval() int64 {
	if r.Count <= 0 {
		return 0
	}
	return int64(r.Period) / r.Count
}

// String formats r as ParseRate reads it, e.g. "100/s", "7/1m30s".
func (r Rate) String() string {
	return strconv.FormatInt(r.Count, 10) + "/" + formatPeriod(r.Period)
}

// formatWindow writes a window length as ParsePeriod reads it, always
// with a number: "1m", "90s" → "1m30s", "7d".
func formatWindow(d time.Duration) string {
	p := formatPeriod(d)
	if p != "" && (p[0] < '0' || p[0] > '9') {
		return "1" + p
	}
	return p
}

func formatPeriod(d time.Duration) string {
	switch d {
	case time.Nanosecond:
		return "ns"
	case time.Microsecond:
		return "us"
	case time.Millisecond:
		return "ms"
	case time.Second:
		return "s"
	case time.Minute:
		return "m"
	case time.Hour:
		return "h"
	case 24 * time.Hour:
		return "d"
	}
	if d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	s := d.String()
	// time.Duration prints "1m30s" and "1h0m0s"; trim the zero tails.
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ParseRate reads a rate written COUNT/PERIOD, where PERIOD is a bare unit
// (ns, us, ms, s, m, h, d, or second, minute, hour, day) or a duration
// in time.ParseDuration syntax with an optional day suffix ("90s", "250ms",
// "1m30s", "7d"). nginx's "10r/s" and "30r/m" are accepted too.
// Examples: "100/s", "5000/h", "7/90s", "5/250ms".
func ParseRate(s string) (Rate, error) {
	num, per, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Rate{}, fmt.Errorf("%w %q: want COUNT/PERIOD such as 100/s or 7/90s", ErrInvalidRate, s)
	}
	num = strings.TrimSuffix(strings.TrimSpace(num), "r")
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return Rate{}, fmt.Errorf("%w %q: count %q is not a whole number", ErrInvalidRate, s, num)
	}
	d, err := ParsePeriod(per)
	if err != nil {
		return Rate{}, fmt.Errorf("%w %q: %v", ErrInvalidRate, s, err)
	}
	r := Rate{Count: n, Period: d}
	if err := r.Validate(); err != nil {
		return Rate{}, fmt.Errorf("%q: %w", s, err)
	}
	return r, nil
}

// ParsePeriod reads a window or period length: a bare unit ("s", "minute")
// meaning one of it, a time.ParseDuration string ("90s", "1m30s"), or a
// whole number of days ("7d"). The result must be positive.
func ParsePeriod(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "ns", "nanosecond":
		return time.Nanosecond, nil
	case "us", "µs", "microsecond":
		return time.Microsecond, nil
	case "ms", "millisecond":
		return time.Millisecond, nil
	case "s", "sec", "second":
		return time.Second, nil
	case "m", "min", "minute":
		return time.Minute, nil
	case "h", "hour":
		return time.Hour, nil
	case "d", "day":
		return 24 * time.Hour, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n <= 0 || n > int64(maxDuration/(24*time.Hour)) {
			return 0, fmt.Errorf("period %q is not a whole positive number of days", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("period %q: %v", s, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("period %q must be positive", s)
	}
	return d, nil
}

const maxDuration = time.Duration(1<<63 - 1)
