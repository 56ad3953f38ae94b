package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/store/memory"
)

// A concurrency slot is held from the decision to the end of the
// exchange (a streamed body's last byte), and given back when the client
// goes away or the upstream times out.
func TestGatewayConcurrencySlots(t *testing.T) {
	release := make(chan struct{})
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stream": // a chunk every 20ms until released
			w.Header().Set("Content-Type", "text/plain")
			for {
				io.WriteString(w, ".")
				w.(http.Flusher).Flush()
				select {
				case <-release:
					return
				case <-r.Context().Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		case "/hang": // past the gateway's response timeout
			select {
			case <-release:
			case <-r.Context().Done():
			}
		default:
			io.WriteString(w, "ok")
		}
	}))
	defer origin.Close()
	defer close(release)
	g, base := startTestGateway(t, `routes:
  - {path: /, upstream: "`+origin.URL+`"}
upstream: {response_timeout: 300ms}
rules:
  - name: conn
    key: global
    policies:
      - {algorithm: concurrency, limit: 2, retry_after: 7s}
`)
	defer g.Close()
	slots := g.slots.(*memory.Slots)
	key := "conn\x1fconn\x1fconcurrency\x1f*"
	held := func() int64 { return slots.Held(key) }
	eventuallyHeld := func(want int64, what string) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for held() != want && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n := held(); n != want {
			t.Fatalf("%s: %d slots held, want %d", what, n, want)
		}
	}
	// Two streams hold both slots until their bodies end.
	var bodies []io.ReadCloser
	for range 2 {
		resp, err := http.Get(base + "/stream")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("stream: %v %v", resp, err)
		}
		bodies = append(bodies, resp.Body)
	}
	eventuallyHeld(2, "two streams open")
	code, _, h := get(t, base+"/x", "")
	if code != 429 || h.Get("Retry-After") != "7" {
		t.Fatalf("a third request: %d, Retry-After %q", code, h.Get("Retry-After"))
	}
	// A client that goes away mid-body gives its slot back (the gateway
	// learns it at its next write to the client: a stream that stalls
	// holds the slot until it writes again or ends).
	bodies[0].Close()
	eventuallyHeld(1, "one client gone")
	if code, body, _ := get(t, base+"/x", ""); code != 200 || body != "ok" {
		t.Fatalf("after a client left: %d %q", code, body)
	}
	// An upstream timeout gives the slot back.
	if code, _, _ := get(t, base+"/hang", ""); code != http.StatusGatewayTimeout {
		t.Fatalf("hanging upstream: %d", code)
	}
	eventuallyHeld(1, "after an upstream timeout")
	// A client whose request is cut before the answer: the slot is back
	// once the gateway's exchange ends.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/hang", nil)
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("a cut request was answered")
	}
	cancel()
	eventuallyHeld(1, "after a cut request")
	bodies[1].Close()
	eventuallyHeld(0, "every stream closed")
}
