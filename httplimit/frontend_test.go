package httplimit

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/frontendtest"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// signalWait is a Config.Wait that reports on waiting when it starts, then
// waits as Sleep does.
func signalWait(waiting chan struct{}) func(ctx context.Context, d time.Duration) error {
	return func(ctx context.Context, d time.Duration) error {
		select {
		case waiting <- struct{}{}:
		default:
		}
		return Sleep(ctx, d)
	}
}

// The middleware answers the front ends' one table of cases
// (frontendtest) as the gateway's paths and forward-auth do.
func TestFrontEndTable(t *testing.T) {
	frontendtest.Run(t, frontendtest.FrontEnd{Name: "net/http middleware", Start: func(t *testing.T, cfg rules.Config) *frontendtest.Running {
		st, err := memory.New(memory.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		e, err := rules.New(cfg, st)
		if err != nil {
			t.Fatal(err)
		}
		waiting := make(chan struct{}, 1)
		l := New(e, Config{Wait: signalWait(waiting)})
		origin, served := frontendtest.Origin()
		h, ended := frontendtest.Track(l.Handler(origin))
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return &frontendtest.Running{URL: srv.URL, Client: srv.Client(), Served: served, Waiting: waiting,
			Ended: ended, Cancelled: l.DelaysCancelled}
	}})
}

// Decide gives the engine the request's context without its
// cancellation, its values kept, and allocates nothing for it
// (context.WithoutCancel cost one allocation a request).
func TestDecideUncancelledAllocatesNothing(t *testing.T) {
	st, _ := memory.New(memory.Config{})
	defer st.Close()
	e, err := rules.New(rules.Config{Rules: []rules.Rule{{Name: "per-ip", Policies: []rules.Policy{{Rate: "1000000/s"}}}}}, st)
	if err != nil {
		t.Fatal(err)
	}
	type key struct{}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	cancel()
	r := httptest.NewRequestWithContext(ctx, "GET", "/items/1", nil)
	r.RemoteAddr = "192.0.2.1:4711"
	Decide(r, e) // build the key once
	if n := testing.AllocsPerRun(1000, func() {
		if res := Decide(r, e); res.Outcome != rules.Allowed {
			t.Fatal(res.Outcome)
		}
	}); n != 0 {
		t.Errorf("Decide: %v allocs, want 0", n)
	}
	c := context.Context((*uncancelled)(r))
	if c.Err() != nil || c.Done() != nil || c.Value(key{}) != "v" {
		t.Errorf("the engine's context: err %v, done %v, value %v; want nil, nil, v", c.Err(), c.Done(), c.Value(key{}))
	}
}
