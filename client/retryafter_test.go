package client

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(1994, time.November, 6, 8, 49, 0, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"120", 120 * time.Second, true},
		{"0", 0, true},
		{"007", 7 * time.Second, true},
		{"99999999999999999999999", time.Duration(1<<63 - 1), true}, // saturates
		// The three HTTP-date forms RFC 9110 §5.6.7 requires, 37 s ahead.
		{"Sun, 06 Nov 1994 08:49:37 GMT", 37 * time.Second, true},
		{"Sunday, 06-Nov-94 08:49:37 GMT", 37 * time.Second, true},
		{"Sun Nov  6 08:49:37 1994", 37 * time.Second, true},
		{"Sun, 06 Nov 1994 08:48:00 GMT", 0, true}, // in the past
		// Malformed: ignored.
		{"", 0, false},
		{"-1", 0, false},
		{"+5", 0, false},
		{"1.5", 0, false},
		{"5s", 0, false},
		{" 5", 0, false},
		{"soon", 0, false},
		{"2024-01-01T00:00:00Z", 0, false},
	} {
		got, ok := ParseRetryAfter(tc.v, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRetryAfterRepeatedFieldIgnored(t *testing.T) {
	h := http.Header{"Retry-After": {"1", "2"}}
	if _, ok := retryAfter(h, time.Now()); ok {
		t.Error("a Retry-After sent twice was honoured")
	}
}
