package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
)

// countingOrigin is a raw origin that answers every request it reads 200
// with the body it received, and counts the requests on the returned
// channel.
func countingOrigin(t *testing.T) (string, <-chan string) {
	t.Helper()
	seen := make(chan string, 16)
	return rawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		for {
			r, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			b, err := io.ReadAll(r.Body)
			if err != nil {
				return
			}
			seen <- r.Method + " " + r.URL.Path
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(b))+"\r\n\r\n"+string(b))
		}
	}), seen
}

// A field name that is not a token (RFC 9110 §5.1) is refused with 400 and
// the connection closed, before anything reaches the upstream: an
// upstream reading "Transfer Encoding" as Transfer-Encoding would frame
// the body otherwise than the gateway did.
func TestInvalidFieldNameRefused(t *testing.T) {
	origin, seen := countingOrigin(t)
	g, _ := startTestGateway(t, "routes: [{path: /, upstream: \""+origin+"\"}]\n")
	for _, head := range []string{
		"Transfer Encoding: chunked\r\nContent-Length: 5\r\n",
		"X-A b: 1\r\n",
		"X-Ok: 1\r\nX\tTab: 1\r\n",
		"Foo Bar: 1\r\n folded continuation\r\n",
	} {
		raw := "POST /x HTTP/1.1\r\nHost: a\r\n" + head + "\r\nhello"
		resps, _, closed := rawExchange(t, g.Addr().String(), raw, 1, true)
		if resps[0].StatusCode != http.StatusBadRequest || !closed {
			t.Errorf("%q: %d, closed %v; want 400 and the connection closed", head, resps[0].StatusCode, closed)
		}
	}
	select {
	case r := <-seen:
		t.Fatalf("%s reached the upstream", r)
	default:
	}
	// Valid names, folded lines and odd but legal tokens pass.
	raw := "POST /ok HTTP/1.1\r\nHost: a\r\nX-Folded: a\r\n b\r\nX!#$%&'*+.^_`|~9: 1\r\nContent-Length: 5\r\n\r\nhello"
	resps, bodies, _ := rawExchange(t, g.Addr().String(), raw, 1, false)
	if resps[0].StatusCode != 200 || bodies[0] != "hello" {
		t.Fatalf("valid names: %d %q", resps[0].StatusCode, bodies[0])
	}
}
