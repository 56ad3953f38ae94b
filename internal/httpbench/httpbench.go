// Package httpbench is the one harness of the net/http middleware's
// benchmarks, used by httplimit's own and by bench/'s against its peers:
// one GET from one client address, served in a loop to a ResponseWriter
// that gets a fresh header map per request, as net/http gives every
// response, so the cost of inserting header fields is counted.
package httpbench

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// Writer is a minimal ResponseWriter: H is the header map (set it fresh
// per request), Status the code written (0 when none was).
type Writer struct {
	H      http.Header
	Status int
}

func (w *Writer) Header() http.Header         { return w.H }
func (w *Writer) WriteHeader(code int)        { w.Status = code }
func (w *Writer) Write(b []byte) (int, error) { return len(b), nil }

var body = []byte("ok\n")

// Bare is the handler every side serves: it sets one header and writes a
// small body, like a typical API handler; alone it is the peer's floor.
var Bare = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header()["Content-Type"] = []string{"text/plain"}
	w.Write(body)
})

// Request is the request served: GET /items/42 from 192.0.2.1.
func Request() *http.Request {
	r := httptest.NewRequest("GET", "/items/42", nil)
	r.RemoteAddr = "192.0.2.1:4711"
	return r
}

// Serve runs b's loop over h, reporting allocations, and fails b when h
// answered other than 200.
func Serve(b *testing.B, h http.Handler) {
	r := Request()
	w := &Writer{}
	b.ReportAllocs()
	for b.Loop() {
		w.H = make(http.Header)
		h.ServeHTTP(w, r)
	}
	if w.Status != 0 && w.Status != 200 {
		b.Fatalf("status %d", w.Status)
	}
}
