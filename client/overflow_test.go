package client

import (
	"math"
	"net/http"
	"testing"
	"time"
)

// With MaxWait unbounded, a server may ask for a wait near the largest
// time.Duration; adding the jitter used to wrap it to a negative sleep, so
// the client went again at once. The wait saturates instead.
func TestHugeRetryAfterWaitsSaturated(t *testing.T) {
	clock := newFakeClock()
	s := newScript(t, clock, reply{status: http.StatusTooManyRequests, header: h("Retry-After", "99999999999999")})
	cfg := clock.config()
	cfg.MaxWait = math.MaxInt64
	cfg.RetryJitter, cfg.PaceJitter = time.Second, time.Second
	cfg.Rand = func(n int64) int64 { return n - 1 } // the largest jitter
	c := mustClient(t, cfg)
	resp, _ := get(t, c, s.srv.URL)
	if resp.StatusCode != http.StatusOK || s.requests() != 2 {
		t.Errorf("status %d after %d requests, want 200 after 2", resp.StatusCode, s.requests())
	}
	if got := clock.Sleeps(); len(got) != 1 || got[0] != math.MaxInt64 {
		t.Errorf("slept %d times (first %v), want one wait of %v", len(got), got[:min(len(got), 1)], time.Duration(math.MaxInt64))
	}
}

// The same on the pacing path: a spent allowance resetting at the end of
// time, plus PaceJitter.
func TestHugeResetPacingWaitsSaturated(t *testing.T) {
	clock := newFakeClock()
	s := newScript(t, clock, reply{status: http.StatusOK, header: h("RateLimit", `"default";r=0;t=99999999999999`)})
	cfg := clock.config()
	cfg.MaxWait = math.MaxInt64
	cfg.PaceJitter = time.Second
	cfg.Rand = func(n int64) int64 { return n - 1 }
	c := mustClient(t, cfg)
	get(t, c, s.srv.URL)
	get(t, c, s.srv.URL)
	if got := clock.Sleeps(); len(got) != 1 || got[0] != math.MaxInt64 {
		t.Errorf("slept %d times (first %v), want one wait of %v", len(got), got[:min(len(got), 1)], time.Duration(math.MaxInt64))
	}
	if s.requests() != 2 {
		t.Errorf("server saw %d requests, want 2", s.requests())
	}
}

func TestAddWait(t *testing.T) {
	for _, tc := range []struct{ d, extra, want time.Duration }{
		{time.Second, time.Second, 2 * time.Second},
		{math.MaxInt64, time.Second, math.MaxInt64},
		{math.MaxInt64 - 1, math.MaxInt64, math.MaxInt64},
		{-time.Second, time.Second, time.Second},
		{0, -time.Second, 0},
	} {
		if got := addWait(tc.d, tc.extra); got != tc.want {
			t.Errorf("addWait(%v, %v) = %v, want %v", tc.d, tc.extra, got, tc.want)
		}
	}
}
