package conns

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"
)

// A tracked upstream connection bounds every exchange by its timeout,
// from the exchange's write: an idle spell longer than the timeout does
// not fail the next exchange, a silent peer fails one after the timeout
// and not before, fasthttp's zero deadlines are ignored, and a lifted
// deadline lets a read wait past the timeout.
func TestTrackedConnBoundsEachExchange(t *testing.T) {
	const timeout = 100 * time.Millisecond
	a, peer := tcpPair(t)
	defer peer.Close()
	var u UpstreamConns
	c := &trackedConn{Conn: a, u: &u, timeout: timeout, slack: DeadlineSlack(timeout)}
	defer c.Close()
	buf := make([]byte, 1)
	exchange := func(answerAfter time.Duration) (time.Duration, error) {
		t.Helper()
		if _, err := c.Write([]byte("q")); err != nil {
			t.Fatal(err)
		}
		if _, err := peer.Read(buf); err != nil {
			t.Fatal(err)
		}
		if answerAfter < 0 {
			// Silent, but not forever: without a bound the read
			// returns this late answer and the test fails, not hangs.
			answerAfter = 20 * timeout
		}
		time.AfterFunc(answerAfter, func() { peer.Write([]byte("a")) })
		// As fasthttp does for a new connection, between write and read.
		c.SetReadDeadline(time.Time{})
		start := time.Now()
		_, err := c.Read(buf)
		return time.Since(start), err
	}

	if _, err := exchange(0); err != nil {
		t.Fatalf("prompt answer: %v", err)
	}
	time.Sleep(timeout + timeout/2) // idle past the deadline set above
	if _, err := exchange(timeout / 5); err != nil {
		t.Fatalf("answer within the timeout after an idle spell: %v", err)
	}
	took, err := exchange(-1) // silent
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("silent peer: %v, want a deadline error", err)
	}
	if took < timeout-timeout/5 {
		t.Errorf("silent peer failed after %v, before the %v timeout", took, timeout)
	}

	// A lifted deadline: the read outlives the timeout.
	if _, err := c.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	peer.Read(buf)
	c.lift()
	time.AfterFunc(timeout*2, func() { peer.Write([]byte("a")) })
	if _, err := c.Read(buf); err != nil {
		t.Fatalf("lifted deadline: %v", err)
	}
}

// deadlineSlack is an eighth of the timeout, at most a second.
func TestDeadlineSlack(t *testing.T) {
	for _, tc := range []struct{ timeout, want time.Duration }{
		{80 * time.Millisecond, 10 * time.Millisecond},
		{4 * time.Second, 500 * time.Millisecond},
		{60 * time.Second, time.Second},
	} {
		if got := DeadlineSlack(tc.timeout); got != tc.want {
			t.Errorf("deadlineSlack(%v) = %v, want %v", tc.timeout, got, tc.want)
		}
	}
}

// Closing a tracked connection forgets it.
func TestTrackedConnForgottenOnClose(t *testing.T) {
	a, peer := tcpPair(t)
	defer peer.Close()
	var u UpstreamConns
	k, ok := keyOf(a.LocalAddr(), a.RemoteAddr())
	if !ok {
		t.Fatal("no key for a TCP connection")
	}
	c := &trackedConn{Conn: a, u: &u, k: k, tracked: true}
	u.m.Store(k, c)
	c.Close()
	if _, ok := u.m.Load(k); ok {
		t.Fatal("a closed connection is still tracked")
	}
	var _ net.Conn = c
}

// A client network holds up to its share, each release gives a place
// back, and a network that holds nothing has no entry left.
func TestClientHolds(t *testing.T) {
	var h ClientHolds
	a, b := netip.MustParsePrefix("192.0.2.1/32"), netip.MustParsePrefix("2001:db8::/64")
	for i := range 3 {
		if !h.Acquire(a, 3) {
			t.Fatalf("place %d refused", i+1)
		}
	}
	if h.Acquire(a, 3) {
		t.Fatal("a fourth place taken with a share of 3")
	}
	if !h.Acquire(b, 3) {
		t.Fatal("another network refused")
	}
	h.Release(a)
	if h.held(a) != 2 || !h.Acquire(a, 3) {
		t.Fatalf("after a release: %d held", h.held(a))
	}
	for range 3 {
		h.Release(a)
	}
	h.Release(b)
	for i := range h.shards {
		if n := len(h.shards[i].n); n != 0 {
			t.Fatalf("shard %d keeps %d entries of networks holding nothing", i, n)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() {
		h.Acquire(a, 3)
		h.Release(a)
	}); allocs != 0 {
		t.Errorf("a hold and its release allocate %v times", allocs)
	}
}
