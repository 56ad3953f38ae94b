package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/redistest"
)

func TestFleetLowestRecentFactor(t *testing.T) {
	srv := redistest.Start(t)
	st := open(t, srv.Addr, Config{Prefix: "fleet:"})
	a, b := st.Fleet("a"), st.Fleet("b")
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	if _, ok, err := a.Lowest(ctx, "origin", now, 3*time.Second); ok || err != nil {
		t.Fatalf("empty fleet: %v %v", ok, err)
	}
	if err := a.Publish(ctx, "origin", 900, now); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(ctx, "origin", 400, now.Add(-2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if low, ok, err := a.Lowest(ctx, "origin", now, 3*time.Second); !ok || err != nil || low != 400 {
		t.Fatalf("lowest %d %v %v, want b's 400", low, ok, err)
	}
	// b's entry is stale 4s later.
	if low, ok, _ := a.Lowest(ctx, "origin", now.Add(1500*time.Millisecond), 3*time.Second); !ok || low != 900 {
		t.Fatalf("lowest %d %v once b's went stale, want a's 900", low, ok)
	}
	// Garbage in the hash is skipped and reported.
	srv.CLI(t, "HSET", "fleet:{adaptive:origin}", "c", "lots")
	low, ok, err := b.Lowest(ctx, "origin", now, 3*time.Second)
	if !errors.Is(err, ErrFleetEntry) || !ok || low != 400 {
		t.Fatalf("with garbage: %d %v %v", low, ok, err)
	}
	if ttl := srv.CLI(t, "PTTL", "fleet:{adaptive:origin}"); ttl == "-1" || ttl == "-2" {
		t.Fatalf("PTTL %s: the hash must expire", ttl)
	}
}

func TestParseFleetEntry(t *testing.T) {
	for in, want := range map[string]bool{"500 1800000000000": true, "0 1": false, "1001 1": false, "x 1": false, "5": false, "5 x": false, "": false} {
		if _, _, ok := ParseFleetEntry(in); ok != want {
			t.Errorf("%q: %v, want %v", in, ok, want)
		}
	}
}
