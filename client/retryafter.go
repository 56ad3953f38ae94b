package client

import (
	"net/http"
	"time"
)

// maxSeconds is the largest count of seconds a time.Duration holds.
const maxSeconds = int64(1<<63-1) / int64(time.Second)

// ParseRetryAfter reads a Retry-After value (RFC 9110 §10.2.3) received at
// now: delay-seconds (1*DIGIT; no sign, no fraction) or an HTTP-date in any
// of the three forms a recipient must accept (IMF-fixdate, RFC 850 and
// asctime, via http.ParseTime). A date in the past means zero. Huge
// delay-seconds saturate at the largest time.Duration. ok is false, and the
// field must be ignored, when v is neither form.
func ParseRetryAfter(v string, now time.Time) (wait time.Duration, ok bool) {
	if n, ok := parseDigits(v); ok {
		return seconds(n), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return until(t, now), true
}

// retryAfter returns the response's Retry-After, if it has a valid one.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := h["Retry-After"]
	if len(v) != 1 { // absent, or repeated: a singleton field sent twice is invalid
		return 0, false
	}
	return ParseRetryAfter(v[0], now)
}

// parseDigits reads 1*DIGIT as a non-negative integer, saturating near
// the top of int64 rather than overflowing.
func parseDigits(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n < (1<<63-1)/10-1 {
			n = n*10 + int64(c-'0')
		}
	}
	return n, true
}

// seconds converts n >= 0 seconds to a Duration, saturating.
func seconds(n int64) time.Duration {
	if n > maxSeconds {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(n) * time.Second
}

// until returns t - now, or zero if t is not after now.
func until(t, now time.Time) time.Duration {
	if d := t.Sub(now); d > 0 {
		return d
	}
	return 0
}
