package gateway

import (
	"net/http"
	"testing"
)

// startLimitedGateway starts a gateway with listen settings extra (YAML
// flow entries) in front of origin.
func startLimitedGateway(t *testing.T, extra, origin string) *Gateway {
	t.Helper()
	g := newTestGateway(t, "listen: {addr: \"127.0.0.1:0\", "+extra+"}\nadmin: {addr: \"off\"}\nreload: {watch: false}\n"+
		"routes: [{path: /, upstream: \""+origin+"\"}]\n")
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	return g
}

// A request head that stalls past listen.read_timeout midway is answered
// 408 on both listeners: TestBadInputTable ("slow head").

// Expect: 100-continue with a Content-Length over listen.max_request_body
// is answered 413 at once, without 100 Continue: the client never sends
// the body. Within the limit, the client is asked for its body.
func TestExpectContinueOverLimitRefusedAtOnce(t *testing.T) {
	origin, seen := countingOrigin(t)
	g := startLimitedGateway(t, "max_request_body: 1000", origin)
	_, br := dialRaw(t, g.Addr().String(), "POST /big HTTP/1.1\r\nHost: a\r\nContent-Length: 1001\r\nExpect: 100-continue\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("1001 bytes announced at a limit of 1000: %d %s, want 413 problem+json first", resp.StatusCode, resp.Header.Get("Content-Type"))
	}

	c, br := dialRaw(t, g.Addr().String(), "POST /small HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusContinue {
		t.Fatalf("5 bytes announced: %v %v, want 100 Continue", resp, err)
	}
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || <-seen != "POST /small" {
		t.Fatalf("5 bytes after 100 Continue: %d", resp.StatusCode)
	}
}
