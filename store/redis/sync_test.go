package redis

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/limit/limittest"
)

// TestSyncPerCharge: each charge succeeds or fails on its own, and Sync
// says which in its Err: the failed ones (invalid, or refused by Redis)
// keep no one else from being applied.
func TestSyncPerCharge(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }})
	fw := limit.FixedWindow{Limit: 10, Window: time.Hour}
	tb := limit.TokenBucket{Rate: limit.Per(10, time.Second)}
	srv.CLI(t, "rpush", "tollgate:{list}", "x")
	charges := []Charge{
		{Key: "good", Policy: fw, Cost: 3},
		{Key: "list", Policy: fw, Cost: 1},                           // WRONGTYPE
		{Key: "neg", Policy: fw, Cost: -1},                           // invalid
		{Key: "tb", Policy: tb, Cost: 1},                             // another algorithm: another round trip
		{Key: "good", Policy: fw, Cost: 2, Err: errors.New("stale")}, // reset by Sync
	}
	err := s.Sync(context.Background(), charges)
	if err == nil || !errors.Is(err, limit.ErrNegativeCost) {
		t.Fatalf("Sync: %v, want an error reporting the failed charges", err)
	}
	for i, want := range []struct {
		ok    bool
		count int64
	}{{true, 3}, {false, 0}, {false, 0}, {true, 0}, {true, 5}} {
		c := charges[i]
		if (c.Err == nil) != want.ok {
			t.Errorf("charge %d (%s): Err %v, want success %v", i, c.Key, c.Err, want.ok)
		}
		if c.Policy == fw && c.State.B != want.count {
			t.Errorf("charge %d (%s): count %d, want %d", i, c.Key, c.State.B, want.count)
		}
	}
	if !errors.Is(charges[2].Err, limit.ErrNegativeCost) {
		t.Errorf("negative cost: Err %v", charges[2].Err)
	}
	if charges[3].State.IsIdle(now) {
		t.Errorf("token bucket charged 1: idle state %+v", charges[3].State)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	charges = []Charge{{Key: "good", Policy: fw, Cost: 1}}
	if err := s.Sync(ctx, charges); err == nil || charges[0].Err == nil {
		t.Fatalf("Sync with a canceled context: %v, Err %v", err, charges[0].Err)
	}
}

// TestSyncReportsTheScriptsClock: each charge says when Redis applied it,
// by the clock the scripts read (Config.Clock, or the server's TIME), which
// is how the eventual tier measures its own clock's skew.
func TestSyncReportsTheScriptsClock(t *testing.T) {
	srv := redistest.Start(t)
	now := limittest.Base + 123_456_000
	fw := limit.FixedWindow{Limit: 10, Window: time.Hour}
	tb := limit.TokenBucket{Rate: limit.Per(10, time.Second), Burst: 1}
	s := open(t, srv.Addr, Config{Clock: func() int64 { return now }})
	charges := []Charge{{Key: "fw", Policy: fw, Cost: 1}, {Key: "tb", Policy: tb}}
	if err := s.Sync(context.Background(), charges); err != nil {
		t.Fatal(err)
	}
	for _, c := range charges {
		if c.Now != now {
			t.Errorf("%s: Now %d with Config.Clock at %d", c.Key, c.Now, now)
		}
	}

	server := open(t, srv.Addr, Config{}) // the server's TIME, on this machine's clock
	before := time.Now().UnixNano()
	if err := server.Sync(context.Background(), charges); err != nil {
		t.Fatal(err)
	}
	after := time.Now().UnixNano()
	for _, c := range charges {
		if c.Now < before-int64(time.Millisecond) || c.Now > after+int64(time.Millisecond) {
			t.Errorf("%s: Now %d outside the round trip [%d, %d]", c.Key, c.Now, before, after)
		}
	}
}

// TestSyncErrorHidesKeys: the error Sync returns names a failed charge's
// key only hashed (the key is a client's address or API key, and errors
// end up in logs), and still wraps the charge's error.
func TestSyncErrorHidesKeys(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv.Addr, Config{})
	const key = "per-ip\x1f198.51.100.7"
	srv.CLI(t, "rpush", "tollgate:{"+key+"}", "x")
	charges := []Charge{{Key: key, Policy: limit.FixedWindow{Limit: 10, Window: time.Hour}, Cost: 1}, {Key: "neg-" + key, Policy: limit.FixedWindow{Limit: 1, Window: time.Hour}, Cost: -1}}
	err := s.Sync(context.Background(), charges)
	if err == nil || strings.Contains(err.Error(), "198.51.100.7") || !strings.Contains(err.Error(), "key#") || !errors.Is(err, limit.ErrNegativeCost) {
		t.Fatalf("Sync error: %v", err)
	}
}
