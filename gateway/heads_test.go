package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Heads larger than fasthttp's 4 KiB default pass both ways: a 6 KiB
// cookie from the client, a 12 KiB Content-Security-Policy from the
// upstream. A request head past 8 KiB is answered 431.
func TestLargeHeads(t *testing.T) {
	csp := strings.Repeat("a", 12<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", csp)
		w.Write([]byte(r.Header.Get("Cookie")[:3]))
	}))
	defer srv.Close()
	_, base := startTestGateway(t, "routes: [{path: /, upstream: \""+srv.URL+"\"}]\n")
	do := func(cookie string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", base+"/", nil)
		req.Header.Set("Cookie", cookie)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b := make([]byte, 16)
		n, _ := resp.Body.Read(b)
		return resp, string(b[:n])
	}
	resp, body := do("c=" + strings.Repeat("x", 6<<10))
	if resp.StatusCode != 200 || body != "c=x" || resp.Header.Get("Content-Security-Policy") != csp {
		t.Fatalf("6 KiB cookie, 12 KiB CSP: %d %q, CSP %d bytes", resp.StatusCode, body, len(resp.Header.Get("Content-Security-Policy")))
	}
	if resp, _ := do("c=" + strings.Repeat("x", 9<<10)); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("9 KiB cookie: %d, want 431", resp.StatusCode)
	}
}
