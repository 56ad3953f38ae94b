package gateway

import (
	"net/http"
	"sync"
	"testing"
	"time"
)

// A counting rule's reservations on both data paths: with a limit of
// 2, one wrong password held at the upstream and a correct login
// answered meanwhile (its reservation ended by its charge, once: the
// HTTP/2 path charges a copy of the decision, and releases that copy
// only), two more wrong passwords sent while the first is held get one
// place, not two: the origin sees at most the limit of failures.
func TestCountingReservesTheRequestsInFlight(t *testing.T) {
	for _, h2 := range []string{"off", "on"} {
		t.Run("http2 "+h2, func(t *testing.T) {
			hold := make(chan struct{})
			var mu sync.Mutex
			failed := 0
			up := h1Upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/right" {
					return // 200
				}
				<-hold
				mu.Lock()
				failed++
				mu.Unlock()
				w.WriteHeader(http.StatusUnauthorized)
			}))
			g := newTestGateway(t, `listen: {addr: "127.0.0.1:0", http2: `+h2+`}
admin: {addr: "127.0.0.1:0"}
reload: {watch: false}
routes: [{path: /, upstream: "`+up+`"}]
rules: [{name: login, count: {statuses: ["401"]}, policies: [{algorithm: fixed_window, limit: 2, window: 1h}]}]
`)
			if err := g.Start(); err != nil {
				t.Fatal(err)
			}
			base := "http://" + g.Addr().String()
			codes := make(chan int, 3)
			send := func(path string) {
				code, _, _ := get(t, base+path, "")
				codes <- code
			}
			go send("/wrong") // held at the upstream
			time.Sleep(100 * time.Millisecond)
			if code, _, _ := get(t, base+"/right", ""); code != http.StatusOK {
				t.Fatalf("a correct login while a wrong one is in flight: %d", code)
			}
			go send("/wrong")
			go send("/wrong")
			time.Sleep(200 * time.Millisecond)
			close(hold)
			var got []int
			for range 3 {
				got = append(got, <-codes)
			}
			n401, n429 := 0, 0
			for _, c := range got {
				switch c {
				case http.StatusUnauthorized:
					n401++
				case http.StatusTooManyRequests:
					n429++
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if n401 != 2 || n429 != 1 || failed != 2 {
				t.Fatalf("answers %v, origin failures %d; want two 401 (the limit) and one 429", got, failed)
			}
		})
	}
}
