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
