package client

import (
	"net/url"
	"strconv"
	"testing"
	"time"
)

func TestPacerBudgetCountsRequestsInFlight(t *testing.T) {
	p := newPacer(8)
	now := time.Unix(1000, 0)
	const h = "api:443"
	var seqs []uint64
	for range 4 { // four requests go out before any answer
		s, w := p.acquire(h, now)
		if w != 0 {
			t.Fatalf("unknown budget made a request wait %v", w)
		}
		seqs = append(seqs, s)
	}
	// The first answer says 3 remain for 10s; 3 more are in flight, so
	// nothing is left for new requests.
	p.observe(h, seqs[0], Allowance{Remaining: 3, Reset: 10 * time.Second}, now)
	if _, w := p.acquire(h, now); w != 10*time.Second {
		t.Fatalf("wait %v, want 10s", w)
	}
	// A newer answer (request 2 of 4: two in flight after it) says 5 remain:
	// 3 may go.
	p.observe(h, seqs[1], Allowance{Remaining: 5, Reset: 10 * time.Second}, now)
	for i := range 3 {
		if _, w := p.acquire(h, now); w != 0 {
			t.Fatalf("request %d waited %v", i, w)
		}
	}
	if _, w := p.acquire(h, now.Add(4*time.Second)); w != 6*time.Second {
		t.Fatalf("wait %v, want 6s", w)
	}
	// A stale answer (request 1 again, older than request 2) is ignored.
	p.observe(h, seqs[0], Allowance{Remaining: 100, Reset: time.Second}, now)
	if _, w := p.acquire(h, now); w == 0 {
		t.Fatal("a stale response lifted the wait")
	}
	// After the reset the budget is unknown and requests flow.
	if _, w := p.acquire(h, now.Add(10*time.Second)); w != 0 {
		t.Fatalf("after reset: wait %v", w)
	}
}

func TestPacerHoldOnlyExtends(t *testing.T) {
	p := newPacer(8)
	now := time.Unix(1000, 0)
	p.holdUntil("h:80", now.Add(5*time.Second), now)
	p.holdUntil("h:80", now.Add(2*time.Second), now)
	if _, w := p.acquire("h:80", now); w != 5*time.Second {
		t.Fatalf("wait %v, want 5s", w)
	}
	p.holdUntil("h:80", now.Add(9*time.Second), now)
	if _, w := p.acquire("h:80", now.Add(time.Second)); w != 8*time.Second {
		t.Fatalf("wait %v, want 8s", w)
	}
	if _, w := p.acquire("other:80", now); w != 0 {
		t.Fatalf("another host waited %v", w)
	}
	if _, w := p.acquire("h:80", now.Add(9*time.Second)); w != 0 {
		t.Fatalf("after the hold: wait %v", w)
	}
}

func TestPacerBounded(t *testing.T) {
	p := newPacer(4)
	now := time.Unix(1000, 0)
	for i := range 100 {
		h := "h" + strconv.Itoa(i) + ":80"
		s, _ := p.acquire(h, now)
		p.observe(h, s, Allowance{Remaining: 0, Reset: time.Duration(i+1) * time.Second}, now)
		if len(p.hosts) > 4 {
			t.Fatalf("%d hosts kept, max 4", len(p.hosts))
		}
	}
	// The latest holds survive; the soonest-ending were evicted.
	if _, w := p.acquire("h99:80", now); w != 100*time.Second {
		t.Fatalf("latest host: wait %v, want 100s", w)
	}
}

func TestHostKey(t *testing.T) {
	for in, want := range map[string]string{
		"http://API.example.com/x":      "api.example.com:80",
		"https://api.example.com/x":     "api.example.com:443",
		"https://api.example.com:8443/": "api.example.com:8443",
		"http://[::1]:9000/":            "[::1]:9000",
	} {
		u, _ := url.Parse(in)
		if got := hostKey(u); got != want {
			t.Errorf("hostKey(%s) = %s, want %s", in, got, want)
		}
	}
}
