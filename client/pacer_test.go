package client

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"
)

func TestPacerBudgetCountsRequestsInFlight(t *testing.T) {
	p := newPacer(8)
	now := time.Unix(1000, 0)
	const h = "api:443"
	for range 4 { // four requests go out before any answer
		if w := p.acquire(h, now); w != 0 {
			t.Fatalf("unknown budget made a request wait %v", w)
		}
	}
	// An answer says 5 remain for 10s; 3 more are in flight (answered
	// before or after it, they may still be charged): 2 may go.
	p.done(h, Allowance{Remaining: 5, Reset: 10 * time.Second}, true, now)
	for i := range 2 {
		if w := p.acquire(h, now); w != 0 {
			t.Fatalf("request %d waited %v", i, w)
		}
	}
	if w := p.acquire(h, now); w != 10*time.Second {
		t.Fatalf("wait %v, want 10s", w)
	}
	// An answer the server gave earlier (more remaining) arrives late: it
	// must not restore the budget. One without fields changes nothing.
	p.done(h, Allowance{Remaining: 40, Reset: 10 * time.Second}, true, now)
	p.done(h, Allowance{}, false, now)
	if w := p.acquire(h, now.Add(4*time.Second)); w != 6*time.Second {
		t.Fatalf("wait %v, want 6s", w)
	}
	// After the reset the budget is unknown and requests flow; the next
	// answer sets a fresh budget.
	later := now.Add(10 * time.Second)
	if w := p.acquire(h, later); w != 0 {
		t.Fatalf("after reset: wait %v", w)
	}
	for range 4 {
		p.done(h, Allowance{}, false, later) // the flight lands
	}
	p.done(h, Allowance{Remaining: 1, Reset: time.Second}, true, later)
	if w := p.acquire(h, later); w != 0 {
		t.Fatalf("fresh budget of 1: wait %v", w)
	}
	if w := p.acquire(h, later); w != time.Second {
		t.Fatalf("fresh budget spent: wait %v, want 1s", w)
	}
}

func TestPacerHoldOnlyExtends(t *testing.T) {
	p := newPacer(8)
	now := time.Unix(1000, 0)
	p.holdUntil("h:80", now.Add(5*time.Second), now)
	p.holdUntil("h:80", now.Add(2*time.Second), now)
	if w := p.acquire("h:80", now); w != 5*time.Second {
		t.Fatalf("wait %v, want 5s", w)
	}
	p.holdUntil("h:80", now.Add(9*time.Second), now)
	if w := p.acquire("h:80", now.Add(time.Second)); w != 8*time.Second {
		t.Fatalf("wait %v, want 8s", w)
	}
	if w := p.acquire("other:80", now); w != 0 {
		t.Fatalf("another host waited %v", w)
	}
	if w := p.acquire("h:80", now.Add(9*time.Second)); w != 0 {
		t.Fatalf("after the hold: wait %v", w)
	}
}

func TestPacerBounded(t *testing.T) {
	p := newPacer(4)
	now := time.Unix(1000, 0)
	for i := range 100 {
		h := "h" + strconv.Itoa(i) + ":80"
		p.acquire(h, now)
		p.done(h, Allowance{Remaining: 0, Reset: time.Duration(i+1) * time.Second}, true, now)
		if len(p.hosts) > 4 {
			t.Fatalf("%d hosts kept, max 4", len(p.hosts))
		}
	}
	// The latest holds survive; the soonest-ending were evicted.
	if w := p.acquire("h99:80", now); w != 100*time.Second {
		t.Fatalf("latest host: wait %v, want 100s", w)
	}
}

func TestHostKey(t *testing.T) {
	for in, want := range map[string]string{
		"http://API.example.com/x":      "api.example.com:80",
		"https://api.example.com/x":     "api.example.com:443",
		"https://api.example.com:8443/": "api.example.com:8443",
		"http://[::1]:9000/":            "[::1]:9000",
		"http://API.example.com:8080/":  "api.example.com:8080",
	} {
		u, _ := url.Parse(in)
		if got := hostKey(u); got != want {
			t.Errorf("hostKey(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestHostKeyCanonicalFormAllocatesNothing(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:8080/x")
	if n := testing.AllocsPerRun(100, func() { _ = hostKey(u) }); n != 0 {
		t.Errorf("hostKey allocates %v times", n)
	}
}

// twoInFlight is a pacer with two requests to host h in flight at now.
func twoInFlight(t *testing.T) (p *pacer, h string, now time.Time) {
	t.Helper()
	p, h, now = newPacer(10), "api:443", time.Unix(1_000_000, 0)
	for range 2 {
		if p.acquire(h, now) != 0 {
			t.Fatal("acquire waited on a fresh host")
		}
	}
	return p, h, now
}

// Two requests in flight across a window boundary: B's response (the old
// window) says r=0;t=1, A's, half a second later from the new window,
// r=999;t=3600. B's holds the host until its own reset, at most the rest
// of the old window; then the new window's 999 stand: the budget of 0
// never takes the new window's reset.
func TestPacerDoesNotMixWindows(t *testing.T) {
	p, h, now := twoInFlight(t)
	p.done(h, Allowance{Remaining: 0, Reset: time.Second}, true, now)
	p.done(h, Allowance{Remaining: 999, Reset: time.Hour}, true, now.Add(500*time.Millisecond))
	if wait := p.acquire(h, now.Add(700*time.Millisecond)); wait != 300*time.Millisecond {
		t.Errorf("at +700ms: wait %v, want the rest of the old window's hold (300ms)", wait)
	}
	if wait := p.acquire(h, now.Add(2*time.Second)); wait > 0 {
		t.Errorf("at +2s: wait %v, want none (999 left in the new window)", wait)
	}
}

// The same, with the new window spent too: the wait runs to its reset.
func TestPacerNewWindowExhausted(t *testing.T) {
	p, h, now := twoInFlight(t)
	p.done(h, Allowance{Remaining: 0, Reset: time.Second}, true, now)
	p.done(h, Allowance{Remaining: 0, Reset: time.Hour}, true, now.Add(500*time.Millisecond))
	if wait := p.acquire(h, now.Add(2*time.Second)); wait < 59*time.Minute {
		t.Errorf("new window said 0 left for an hour: wait %v at +2s, want about 1h", wait)
	}
}

// Two spent budgets whose resets are further apart than one window's
// skew: the later reset holds.
func TestPacerBothExhaustedKeepsLaterReset(t *testing.T) {
	p, h, now := twoInFlight(t)
	p.done(h, Allowance{Remaining: 0, Reset: time.Second}, true, now)
	p.done(h, Allowance{Remaining: 0, Reset: 2500 * time.Millisecond}, true, now)
	if wait := p.acquire(h, now.Add(1200*time.Millisecond)); wait != 1300*time.Millisecond {
		t.Errorf("1.2s on, both said 0 left, the later reset at 2.5s: wait %v, want 1.3s", wait)
	}
}

// The new window's budget (2) reported first, then a late response of
// the old window (0 left, reset in 1s): the new window stays, so at most
// 2 requests go.
func TestPacerLateOldWindowResponse(t *testing.T) {
	p, h, now := twoInFlight(t)
	p.done(h, Allowance{Remaining: 2, Reset: time.Hour}, true, now)
	p.done(h, Allowance{Remaining: 0, Reset: time.Second}, true, now.Add(100*time.Millisecond))
	sent := 0
	for range 10 {
		if p.acquire(h, now.Add(2*time.Second)) == 0 {
			sent++
		}
	}
	if sent > 2 {
		t.Errorf("sent %d in a window the server said had 2 left", sent)
	}
}

// allowanceOf parses a draft-10 RateLimit field as the transport does.
func allowanceOf(t *testing.T, field string, now time.Time) Allowance {
	t.Helper()
	a, ok := ParseAllowance(http.Header{"Ratelimit": {field}}, now)
	if !ok {
		t.Fatalf("ParseAllowance(%q) not ok", field)
	}
	return a
}

// A response saying nothing is left holds the host until its reset,
// whatever the other responses said: a per-second quota spent after an
// hourly one reported 5 left, in either order, and a spent budget of the
// same window whose reset, skewed by transit, reads 2 s earlier.
func TestPacerSpentAllowanceHolds(t *testing.T) {
	type resp struct {
		a  Allowance
		at time.Duration
	}
	for name, seq := range map[string](func(now time.Time) []resp){
		"spent per-second after hourly": func(now time.Time) []resp {
			return []resp{
				{allowanceOf(t, `"sec";r=8;t=1, "hour";r=5;t=3000`, now), 0},
				{allowanceOf(t, `"sec";r=0;t=1, "hour";r=4;t=3000`, now), 100 * time.Millisecond},
			}
		},
		"hourly after spent per-second": func(now time.Time) []resp {
			return []resp{
				{allowanceOf(t, `"sec";r=0;t=1, "hour";r=4;t=3000`, now), 0},
				{allowanceOf(t, `"sec";r=8;t=1, "hour";r=5;t=3000`, now), 100 * time.Millisecond},
			}
		},
		"same window, skewed reset": func(time.Time) []resp {
			return []resp{
				{Allowance{Remaining: 5, Reset: 12 * time.Second}, 0},
				{Allowance{Remaining: 0, Reset: 10 * time.Second}, 500 * time.Millisecond},
			}
		},
	} {
		p, h, now := twoInFlight(t)
		for _, r := range seq(now) {
			p.done(h, r.a, true, now.Add(r.at))
		}
		if wait := p.acquire(h, now.Add(600*time.Millisecond)); wait <= 0 {
			t.Errorf("%s: a request went while the server said none would pass", name)
		}
	}
}
