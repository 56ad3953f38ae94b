package forwardauth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/httplimit"
	"github.com/tollgate-dev/tollgate/internal/frontendtest"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// statusCounter counts the answers that allowed (200).
type statusCounter struct {
	http.ResponseWriter
	allowed *atomic.Int64
}

func (w statusCounter) WriteHeader(code int) {
	if code == http.StatusOK {
		w.allowed.Add(1)
	}
	w.ResponseWriter.WriteHeader(code)
}

// Forward-auth (its forwarded style) answers the front ends' one table of
// cases (frontendtest) as the middleware and the gateway do: the auth
// request describes the request of each case; served is answered 200.
func TestFrontEndTable(t *testing.T) {
	frontendtest.Run(t, frontendtest.FrontEnd{Name: "forward-auth", Start: func(t *testing.T, cfg rules.Config) *frontendtest.Running {
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
		fa, err := New(e, Config{TrustedProxies: []string{"127.0.0.1"}, Wait: func(ctx context.Context, d time.Duration) error {
			select {
			case waiting <- struct{}{}:
			default:
			}
			return httplimit.Sleep(ctx, d)
		}})
		if err != nil {
			t.Fatal(err)
		}
		var allowed atomic.Int64
		h, ended := frontendtest.Track(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fa.ServeHTTP(statusCounter{w, &allowed}, r)
		}))
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return &frontendtest.Running{
			URL: srv.URL, Client: srv.Client(),
			Prepare: func(r *http.Request) {
				r.Header.Set("X-Forwarded-Method", r.Method)
				r.Header.Set("X-Forwarded-Uri", r.URL.RequestURI())
				r.Header.Set("X-Forwarded-Host", "api.test")
				r.URL.Path = "/auth"
			},
			Served: func() int { return int(allowed.Load()) }, Waiting: waiting, Ended: ended, Cancelled: fa.DelaysCancelled,
		}
	}})
}
