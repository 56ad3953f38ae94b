package redis

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/logtest"
	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
)

func TestConfigValidate(t *testing.T) {
	for name, c := range map[string]Config{
		"no address":     {},
		"brace prefix":   {Addrs: []string{"x:1"}, Prefix: "a{b}"},
		"negative":       {Addrs: []string{"x:1"}, Timeout: -1},
		"unknown mode":   {Addrs: []string{"x:1"}, OnFailure: "maybe"},
		"negative sizes": {Addrs: []string{"x:1"}, BreakerFailures: -1},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := (Config{Addrs: []string{"127.0.0.1:6379"}}).Validate(); err != nil {
		t.Errorf("minimal config: %v", err)
	}
}

// TestDeadlines: callers in one slice share a context whose deadline is
// between the timeout and the timeout plus a slice from now; a cancellable
// caller context gets its own.
func TestDeadlines(t *testing.T) {
	d := newDeadlines(50 * time.Millisecond)
	start := time.Now()
	c1, cancel1 := d.with(context.Background())
	c2, cancel2 := d.with(context.Background())
	defer cancel1()
	defer cancel2()
	if c1 != c2 {
		t.Error("two callers in one slice got different contexts")
	}
	dl, ok := c1.Deadline()
	if !ok || dl.Before(start.Add(50*time.Millisecond)) || dl.After(time.Now().Add(55*time.Millisecond)) {
		t.Errorf("deadline %v after start, want within [50ms, 55ms]", dl.Sub(start))
	}
	parent, cancel := context.WithCancel(context.Background())
	c3, cancel3 := d.with(parent)
	defer cancel3()
	cancel()
	if c3.Err() == nil {
		t.Error("a cancelled caller's context did not end its round trip")
	}
}

// TestSharedDeadlineCarriesNoCallerValues: the context shared by callers in
// one slice is not derived from the first caller's context. A fasthttp
// RequestCtx is such a caller, and is reused after its request: a timer
// that read it when the shared deadline fired raced with its reset (found
// by the race detector in examples' TestConsistencyTiers).
func TestSharedDeadlineCarriesNoCallerValues(t *testing.T) {
	type key struct{}
	d := newDeadlines(50 * time.Millisecond)
	c, cancel := d.with(context.WithValue(context.Background(), key{}, "first caller"))
	defer cancel()
	if v := c.Value(key{}); v != nil {
		t.Errorf("the shared deadline carries the first caller's value %v", v)
	}
}

// TestPassword connects to a server that requires AUTH. With a wrong
// password the store is not connected: it says why in its log, without
// the password, and answers by its failure mode.
func TestPassword(t *testing.T) {
	srv := redistest.Start(t, "--requirepass", "s3cret")
	var logs logtest.Buffer
	bad, err := New(context.Background(), Config{Addrs: []string{srv.Addr}, Password: "hunter2-wrong",
		OnFailure: failmode.Closed, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	d, err := bad.Apply(context.Background(), "k", limit.FixedWindow{Limit: 1, Window: time.Minute}, 1)
	if err != nil || d.Allowed || bad.Stats().Connected {
		t.Fatalf("with a wrong password: %+v %v %+v", d, err, bad.Stats())
	}
	bad.Close()
	if out := logs.String(); !strings.Contains(out, "not reachable") || strings.Contains(out, "hunter2") {
		t.Fatalf("log: %s", out)
	}
	s := open(t, srv.Addr, Config{Password: "s3cret"})
	d, err = s.Apply(context.Background(), "k", limit.FixedWindow{Limit: 1, Window: time.Minute}, 1)
	if err != nil || !d.Allowed {
		t.Fatalf("%+v %v", d, err)
	}
}
