package redis

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
)

// busy runs a script that never ends on srv, waits until the server
// answers -BUSY, and kills the script at cleanup (before the server stops).
func busy(t *testing.T, srv *redistest.Server) {
	t.Helper()
	port := strconv.Itoa(srv.Port)
	cmd := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", port, "EVAL", "while true do end", "0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// SCRIPT KILL is served while busy; the script wrote nothing, so
		// it dies and the server can stop.
		out, err := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", port, "SCRIPT", "KILL").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "OK") {
			t.Errorf("SCRIPT KILL: %v: %s", err, out)
		}
		cmd.Wait()
	})
	for range 500 {
		out, _ := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", port, "PING").CombinedOutput()
		if strings.HasPrefix(strings.TrimPrefix(string(out), "(error) "), "BUSY") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("redis-server never answered BUSY")
}

// TestBusyIsUnavailable: a Redis busy with a long script answers -BUSY to
// everyone else. That is Redis being unavailable, not an answer: each
// decision gets its failure mode (not an error), and the breaker counts the
// failures.
func TestBusyIsUnavailable(t *testing.T) {
	srv := redistest.Start(t, "--busy-reply-threshold", "10")
	s := open(t, srv.Addr, Config{OnFailure: failmode.Open, Timeout: 200 * time.Millisecond, CacheSize: -1,
		BreakerFailures: 100})
	p := limit.TokenBucket{Rate: limit.Per(10, time.Second)}
	// s2 is opened now: a busy server refuses the connection handshake.
	s2 := open(t, srv.Addr, Config{OnFailure: failmode.Open, Timeout: 200 * time.Millisecond, CacheSize: -1,
		BreakerFailures: 2, BreakerCooldown: time.Hour})
	ctx := context.Background()
	if _, err := s2.Apply(ctx, "k", p, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, "k", p, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyAll(ctx, []limit.Request{{Key: "k", Policy: p, Cost: 1}}); err != nil {
		t.Fatal(err)
	}
	busy(t, srv)
	for i := range 3 {
		if d, err := s.Apply(ctx, "k", p, 1); err != nil || !d.Allowed {
			t.Errorf("Apply %d during BUSY: %+v %v, want the FailOpen decision", i, d, err)
		}
		if d, err := s.ApplyAll(ctx, []limit.Request{{Key: "k", Policy: p, Cost: 1}}); err != nil || !d.Allowed {
			t.Errorf("ApplyAll %d during BUSY: %+v %v, want the FailOpen decision", i, d, err)
		}
		if d, err := s.WithFailure(failmode.Closed).Apply(ctx, "k", p, 1); err != nil || d.Allowed {
			t.Errorf("FailClosed Apply %d during BUSY: %+v %v, want the FailClosed decision", i, d, err)
		}
	}
	st := s.Stats()
	if st.Failures != 9 || st.FailOpen != 6 || st.FailClosed != 3 {
		t.Fatalf("stats %+v: want 9 failures, 6 fail-open and 3 fail-closed answers", st)
	}

	// The failures count for the breaker: two open it.
	for range 3 {
		if d, err := s2.Apply(ctx, "k", p, 1); err != nil || !d.Allowed {
			t.Errorf("Apply during BUSY: %+v %v, want the FailOpen decision", d, err)
		}
	}
	if st := s2.Stats(); !st.BreakerOpen || st.BreakerTrips != 1 || st.ShortCircuits != 1 {
		t.Fatalf("stats %+v: want the breaker open after 2 BUSY replies, and the third decision short-circuited", st)
	}
}

// TestReadOnlyIsUnavailable: after a failover the configured address may
// be a replica, which answers writes with -READONLY. The failure mode
// answers, as for a Redis that is down.
func TestReadOnlyIsUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv.Addr, Config{OnFailure: failmode.Closed, Timeout: 200 * time.Millisecond, CacheSize: -1, BreakerFailures: 100})
	p := limit.TokenBucket{Rate: limit.Per(10, time.Second)}
	ctx := context.Background()
	if d, err := s.Apply(ctx, "k", p, 1); err != nil || !d.Allowed {
		t.Fatalf("as a master: %+v %v", d, err)
	}
	srv.CLI(t, "replicaof", "127.0.0.1", "1") // a master that is not there
	t.Cleanup(func() { srv.CLI(t, "replicaof", "no", "one") })
	d, err := s.Apply(ctx, "k", p, 1)
	if err != nil || d.Allowed {
		t.Fatalf("as a replica: %+v %v; want the fail-closed refusal, no error", d, err)
	}
	if st := s.Stats(); st.Failures != 1 || st.FailClosed != 1 {
		t.Fatalf("stats %+v: want 1 failure answered fail-closed", st)
	}
}
