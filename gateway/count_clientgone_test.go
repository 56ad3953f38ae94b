package gateway

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// A counting rule on an endpoint with a side effect (count its 2xx: one
// SMS an hour). The client sends the request and goes away before the
// upstream answers. On both data paths the upstream exchange goes on and
// its 200 is charged: only the first of three such requests reaches the
// upstream. (On the net/http path the client's going used to cancel the
// upstream request, charged as no answer, which the rule does not
// count, so every one reached the upstream.) Over HTTP/1.1, and over
// h2c, whose client resets its stream.
func TestCountingClientGoneIsCharged(t *testing.T) {
	var effects atomic.Int64
	origin := h1Upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(150 * time.Millisecond) // the work, done whether or not anyone waits
		effects.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	for _, c := range []struct{ name, h2 string }{{"http2 off", "off"}, {"http2 on", "on"}, {"h2c", "on"}} {
		t.Run(c.name, func(t *testing.T) {
			effects.Store(0)
			g := newTestGateway(t, `listen: {addr: "127.0.0.1:0", http2: `+c.h2+`}
admin: {addr: "127.0.0.1:0"}
reload: {watch: false}
routes: [{path: /, upstream: "`+origin+`"}]
rules: [{name: sms, count: {statuses: ["2xx"]}, policies: [{algorithm: token_bucket, rate: 1/h, burst: 1}]}]
`)
			if err := g.Start(); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if c.name == "h2c" {
					ctx, cancel := context.WithTimeout(context.Background(), 40*time.Millisecond)
					req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+g.Addr().String()+"/send", http.NoBody)
					if resp, err := h2cClient().Do(req); err == nil {
						resp.Body.Close()
						if resp.StatusCode != http.StatusTooManyRequests { // refused at once, once one is charged
							t.Fatalf("answered %d before the upstream could have", resp.StatusCode)
						}
					}
					cancel()
				} else {
					c, err := net.Dial("tcp", g.Addr().String())
					if err != nil {
						t.Fatal(err)
					}
					if _, err := c.Write([]byte("POST /send HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")); err != nil {
						t.Fatal(err)
					}
					time.Sleep(40 * time.Millisecond) // proxied, not answered yet
					c.Close()
				}
				time.Sleep(250 * time.Millisecond) // the upstream finishes its work
			}
			if n := effects.Load(); n != 1 {
				t.Errorf("%d side effects upstream from clients that left before the answer; a rule counting 2xx at 1/h should have admitted 1", n)
			}
		})
	}
}

// What the detached exchange of a counting request does not change on
// the net/http path: a request no rule counts is cancelled upstream when
// its client goes away, and a counting request's exchange is cancelled
// by its client's going once its answer has been charged (a response
// body that stalls is not read for no one), and by
// upstream.response_timeout before.
func TestCountingClientGoneCancelsWhenNothingIsOwed(t *testing.T) {
	cancelled := make(chan string, 8)
	origin := h1Upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stall-body" {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
			cancelled <- r.URL.Path
		case <-time.After(3 * time.Second):
			if r.URL.Path != "/stall-body" {
				w.WriteHeader(http.StatusOK)
			}
		}
	}))
	g := newTestGateway(t, `listen: {addr: "127.0.0.1:0", http2: on}
admin: {addr: "127.0.0.1:0"}
reload: {watch: false}
upstream: {response_timeout: 500ms}
routes: [{path: /, upstream: "`+origin+`"}]
rules:
  - {name: sms, match: {path_prefixes: [/count/, /stall-body]}, count: {statuses: ["2xx"]}, policies: [{rate: 100/s}]}
  - {name: api, match: {path_prefixes: [/plain/]}, policies: [{rate: 100/s}]}
`)
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	leave := func(path string, wait time.Duration) {
		c, err := net.Dial("tcp", g.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(wait)
		c.Close()
	}
	expect := func(path string, within time.Duration) {
		t.Helper()
		select {
		case p := <-cancelled:
			if p != path {
				t.Errorf("upstream exchange %s cancelled, want %s", p, path)
			}
		case <-time.After(within):
			t.Errorf("upstream exchange %s not cancelled within %v", path, within)
		}
	}
	leave("/plain/x", 50*time.Millisecond)
	expect("/plain/x", 300*time.Millisecond) // at once, with its client

	start := time.Now()
	leave("/count/x", 50*time.Millisecond)
	select {
	case p := <-cancelled:
		if d := time.Since(start); d < 400*time.Millisecond {
			t.Errorf("counting exchange %s cancelled after %v, with its client: want the response timeout (500ms)", p, d)
		}
	case <-time.After(2 * time.Second):
		t.Error("counting exchange not bounded by upstream.response_timeout")
	}

	leave("/stall-body", 150*time.Millisecond) // the headers are in and charged
	expect("/stall-body", 500*time.Millisecond)
}
