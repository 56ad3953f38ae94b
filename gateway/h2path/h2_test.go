package h2path

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// An HTTP/2 stream reaches the data path without x/net's h2c handler on
// its stack (upgradeH2C), which only serves HTTP/1.1's Upgrade: h2c.
func TestH2StreamSkipsH2CHandler(t *testing.T) {
	var frames []string
	h := upgradeH2C(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		pcs := make([]uintptr, 64)
		fs := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
		for {
			f, more := fs.Next()
			frames = append(frames, f.Function)
			if !more {
				break
			}
		}
	}), &http.HTTP2Config{})
	r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/2.0", 2, 0
	h.ServeHTTP(httptest.NewRecorder(), r)
	if len(frames) == 0 {
		t.Fatal("the handler was not called")
	}
	for _, f := range frames {
		if strings.Contains(f, "http2/h2c.") {
			t.Fatalf("an HTTP/2 stream went through %s", f)
		}
	}
}
