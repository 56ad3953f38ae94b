package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Shutdown says how many requests its deadline cut: the exchanges still
// running, not the idle keep-alive connections.
func TestShutdownCountsTheRequestsItCuts(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-release
		}
	}))
	defer srv.Close()
	defer close(release)
	g, base := startTestGateway(t, "routes: [{path: /, upstream: \""+srv.URL+"\"}]\n")
	idle := &http.Client{} // its connection stays open, idle
	defer idle.CloseIdleConnections()
	resp, err := idle.Get(base + "/fast")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for range 2 {
		go func() {
			c := &http.Client{Transport: &http.Transport{}}
			if resp, err := c.Get(base + "/slow"); err == nil {
				resp.Body.Close()
			}
		}()
		<-entered
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = g.Shutdown(ctx)
	var cut *CutError
	if !errors.As(err, &cut) || cut.Requests != 2 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want 2 requests cut at the deadline", err)
	}
}

// A shutdown whose requests all finish in time, with idle keep-alive
// connections open, cuts nothing.
func TestShutdownWithOnlyIdleConnectionsCutsNothing(t *testing.T) {
	g, base := startTestGateway(t, "routes: [{path: /, upstream: demo}]\n")
	c := &http.Client{}
	defer c.CloseIdleConnections()
	for range 3 {
		resp, err := c.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown = %v, want nil", err)
	}
	if n := g.core.InFlight.Load(); n != 0 {
		t.Fatalf("%d requests counted in flight after shutdown", n)
	}
}
