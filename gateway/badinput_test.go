package gateway

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"golang.org/x/net/http2"

	"github.com/tollgate-dev/tollgate/gateway/exchange"
	"github.com/tollgate-dev/tollgate/gateway/observe"
)

// The table of bad input that both data paths answer alike, run against
// each listener the case applies to: HTTP/1.1 on the fasthttp listener,
// HTTP/1.1 on the net/http listener (listen.http2 on), and HTTP/2 (h2c)
// on the latter. Every answer is the gateway's own problem+json; a client
// fault is never counted as an upstream error, and a body the client
// failed to send never reaches the upstream as a complete request.

// badListener is one of the data paths a bad-input case runs against.
type badListener struct {
	name  string
	http2 bool // listen.http2 on
	h2    bool // the case is sent as HTTP/2 frames
	tls   bool // over TLS (HTTP/1.1 by ALPN)
}

var badListeners = []badListener{
	{name: "fasthttp/HTTP1.1", http2: false},
	{name: "net-http/HTTP1.1", http2: true},
	{name: "net-http/HTTP2", http2: true, h2: true},
	// net/http reads and writes a TLS connection's HTTP/1.1 otherwise
	// than a plain one's (answerSlowHead).
	{name: "net-http/HTTP1.1-TLS", http2: true, tls: true},
}

// badReadTimeout is the table gateways' listen.read_timeout: the slow
// cases stall past it.
const badReadTimeout = 300 * time.Millisecond

// badCase is one bad input. h1 is the raw HTTP/1.1 request ("" where the
// case has no HTTP/1.1 form), sent whole, then the write side closed
// when halfClose; h2 writes stream 1's frames (nil where the case has no
// HTTP/2 form). want is the status on every listener it applies to,
// with the gateway's problem+json, except where Go's net/http answers
// itself, before any of the gateway's code runs: then own1 (HTTP/1.1 on
// the net/http listener) and own2 (HTTP/2) are what it answers, as
// doc.go says.
type badCase struct {
	name       string
	h1         string
	halfClose  bool
	h2         func(fr *http2.Framer, addr string) error
	want       int
	own1, own2 *badAnswer
}

// h2Post is a POST's header block on stream 1, with extra fields.
func h2Post(fr *http2.Framer, addr string, endStream bool, extra ...string) error {
	fields := append([]string{":method", "POST", ":scheme", "http", ":authority", addr, ":path", "/up"}, extra...)
	return writeHeaderBlock(fr, 1, headerBlock(fields...), endStream)
}

// writeHeaderBlock writes block as HEADERS and as many CONTINUATION
// frames as the default frame size needs.
func writeHeaderBlock(fr *http2.Framer, id uint32, block []byte, endStream bool) error {
	const max = 16 << 10
	k := min(len(block), max)
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block[:k], EndStream: endStream, EndHeaders: k == len(block)}); err != nil {
		return err
	}
	for block = block[k:]; len(block) > 0; block = block[k:] {
		k = min(len(block), max)
		if err := fr.WriteContinuation(id, k == len(block), block[:k]); err != nil {
			return err
		}
	}
	return nil
}

// bigGet is a GET whose head carries fields of n bytes each.
func bigGet(n ...int) string {
	var b strings.Builder
	b.WriteString("GET /up HTTP/1.1\r\nHost: a\r\n")
	for i, k := range n {
		fmt.Fprintf(&b, "X-Big%d: %s\r\n", i, strings.Repeat("a", k))
	}
	b.WriteString("\r\n")
	return b.String()
}

// h2BigGet is bigGet on HTTP/2.
func h2BigGet(n ...int) func(*http2.Framer, string) error {
	return func(fr *http2.Framer, addr string) error {
		fields := []string{":method", "GET", ":scheme", "http", ":authority", addr, ":path", "/up"}
		for i, k := range n {
			fields = append(fields, fmt.Sprintf("x-big%d", i), strings.Repeat("a", k))
		}
		return writeHeaderBlock(fr, 1, headerBlock(fields...), true)
	}
}

var badCases = []badCase{
	// A control: well framed, it passes everywhere.
	{name: "well-framed chunked body", h1: chunkedRequest("5\r\nhello\r\n0\r\n\r\n"),
		h2: func(fr *http2.Framer, addr string) error {
			if err := h2Post(fr, addr, false, "content-length", "5"); err != nil {
				return err
			}
			return fr.WriteData(1, true, []byte("hello"))
		}, want: 200},
	// Broken chunked framing (HTTP/2 has none): the client's 400.
	{name: "chunk size zz", h1: chunkedRequest("zz\r\nhello\r\n0\r\n\r\n"), want: 400},
	{name: "chunk size -3", h1: chunkedRequest("-3\r\nhel\r\n0\r\n\r\n"), want: 400},
	{name: "chunk size overflow", h1: chunkedRequest("fffffffffffffffffffff\r\nhello\r\n0\r\n\r\n"), want: 400},
	{name: "chunk lines ending in bare LF", h1: chunkedRequest("5\nhello\n0\n\n"), want: 400},
	{name: "chunk data longer than its size", h1: chunkedRequest("5\r\nhelloXX\r\n0\r\n\r\n"), want: 400},
	// A body that ends before its Content-Length: 400.
	{name: "body cut short", h1: "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n1234567", halfClose: true,
		h2: func(fr *http2.Framer, addr string) error {
			if err := h2Post(fr, addr, false, "content-length", "100"); err != nil {
				return err
			}
			return fr.WriteData(1, true, []byte("1234567"))
		}, want: 400},
	// A body that stalls past read_timeout: 408, and the upstream never
	// sees it complete.
	{name: "slow body", h1: "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n1234567",
		h2: func(fr *http2.Framer, addr string) error {
			if err := h2Post(fr, addr, false, "content-length", "100"); err != nil {
				return err
			}
			return fr.WriteData(1, false, []byte("1234567"))
		}, want: 408},
	{name: "slow chunked body", h1: chunkedRequest("64\r\n1234567"),
		h2: func(fr *http2.Framer, addr string) error {
			if err := h2Post(fr, addr, false); err != nil {
				return err
			}
			return fr.WriteData(1, false, []byte("1234567"))
		}, want: 408},
	// A head that stalls past read_timeout (HTTP/2's header block has
	// no stream to answer on until it ends: see doc.go).
	{name: "slow head, between fields", h1: "GET /up HTTP/1.1\r\nHost: a\r\n", want: 408},
	{name: "slow head, within a field", h1: "GET /up HTTP/1.1\r\nHost: a\r\nX-Slow: ", want: 408},
	{name: "slow head, within the request line", h1: "GET /slow", want: 408},
	// A head over both listeners' bounds (8 KiB on the fasthttp
	// listener, max_header_list_size 16384 on the net/http one): 431.
	{name: "header list of one 17 KiB field", h1: bigGet(17 << 10), h2: h2BigGet(17 << 10), want: 431},
	{name: "header list of 17 fields of 1 KiB", h1: bigGet(1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10),
		h2: h2BigGet(1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10, 1<<10), want: 431},
	{name: "header list of one 40 KiB field", h1: bigGet(40 << 10), h2: h2BigGet(40 << 10), want: 431},
	// What net/http answers itself.
	{name: "header list of one 80 KiB field", h1: bigGet(80 << 10), h2: h2BigGet(80 << 10), want: 431,
		own1: &badAnswer{431, "text/plain; charset=utf-8", true}, own2: &badAnswer{}}, // GOAWAY COMPRESSION_ERROR
	// In one HEADERS frame (Go's server reads frames up to 1 MiB): had
	// a CONTINUATION followed the frame that crossed the bound, the
	// connection would be closed (GOAWAY PROTOCOL_ERROR).
	{name: "header list of 80 fields of 1 KiB in one frame", h2: func(fr *http2.Framer, addr string) error {
		fields := []string{":method", "GET", ":scheme", "http", ":authority", addr, ":path", "/up"}
		for i := range 80 {
			fields = append(fields, fmt.Sprintf("x-big%d", i), strings.Repeat("a", 1<<10))
		}
		return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: headerBlock(fields...), EndStream: true, EndHeaders: true})
	}, want: 431, own2: &badAnswer{431, "text/html; charset=utf-8", false}},
	{name: "field name not a token", h1: "GET /up HTTP/1.1\r\nHost: a\r\nX A: 1\r\n\r\n", want: 400,
		own1: &badAnswer{400, "text/plain; charset=utf-8", true}},
	{name: "no Host", h1: "GET /up HTTP/1.1\r\n\r\n", want: 400,
		own1: &badAnswer{400, "text/plain; charset=utf-8", true}},
	{name: "transfer coding gzip", h1: "POST /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", want: 400,
		own1: &badAnswer{501, "text/plain; charset=utf-8", true}},
}

// badAnswer is what a listener answered a case: the status (0 for
// none), its content type, and whether the connection then ended.
type badAnswer struct {
	status int
	ctype  string
	closed bool
}

func (a badAnswer) String() string {
	if a.status == 0 {
		return "no answer"
	}
	return fmt.Sprintf("%d %s closed=%v", a.status, a.ctype, a.closed)
}

// sendH1 sends c.h1 to addr (over TLS when withTLS) and reads the
// answer.
func sendH1(t *testing.T, addr string, withTLS bool, c badCase) badAnswer {
	t.Helper()
	var conn net.Conn
	var err error
	if withTLS {
		conn, err = tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	} else {
		conn, err = net.Dial("tcp", addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, c.h1); err != nil {
		t.Fatal(err)
	}
	if c.halfClose {
		conn.(interface{ CloseWrite() error }).CloseWrite()
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return badAnswer{}
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	a := badAnswer{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type")}
	if a.status != 200 {
		// The gateway closes a connection it cannot frame further.
		_, err := br.ReadByte()
		a.closed = err != nil && !exchange.IsTimeout(err)
	}
	return a
}

// sendH2 sends c.h2 on a fresh h2c connection to addr and reads stream
// 1's answer.
func sendH2(t *testing.T, addr string, c badCase) badAnswer {
	t.Helper()
	raw := dialRawH2(t, addr)
	defer raw.c.Close()
	if err := raw.write(func(fr *http2.Framer) error { return c.h2(fr, addr) }); err != nil {
		t.Fatal(err)
	}
	f := raw.readUntil(t, func(f http2.Frame) bool {
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			return f.StreamID == 1
		case *http2.GoAwayFrame, *http2.RSTStreamFrame:
			return true
		}
		return false
	})
	h, ok := f.(*http2.MetaHeadersFrame)
	if !ok {
		t.Logf("HTTP/2 ended with %v", f)
		return badAnswer{}
	}
	a := badAnswer{}
	fmt.Sscan(h.PseudoValue("status"), &a.status)
	for _, hf := range h.Fields {
		if hf.Name == "content-type" {
			a.ctype = hf.Value
		}
	}
	return a
}

// badUpstream records what the upstream read of each request's body.
type badUpstream struct {
	mu       sync.Mutex
	complete int // requests whose body it read whole
	failed   int // requests whose body read failed
}

func (u *badUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, err := io.Copy(io.Discard, r.Body)
	u.mu.Lock()
	if err != nil {
		u.failed++
	} else {
		u.complete++
	}
	u.mu.Unlock()
	io.WriteString(w, "ok")
}

func (u *badUpstream) counts() (complete, failed int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.complete, u.failed
}

func TestBadInputTable(t *testing.T) {
	for _, l := range badListeners {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			up := &badUpstream{}
			origin := h1Upstream(t, up)
			yaml := fmt.Sprintf("listen: {addr: \"127.0.0.1:0\", read_timeout: %v", badReadTimeout)
			if l.http2 {
				yaml += ", http2: on"
			}
			if l.tls {
				cert, key := writeTestCert(t)
				yaml += fmt.Sprintf(", tls: {cert: %q, key: %q}", cert, key)
			}
			g := newTestGateway(t, yaml+"}\nadmin: {addr: \"off\"}\nreload: {watch: false}\nroutes: [{path: /, upstream: \""+origin+"\"}]\n")
			if err := g.Start(); err != nil {
				t.Fatal(err)
			}
			addr := g.Addr().String()
			for _, c := range badCases {
				if (l.h2 && c.h2 == nil) || (!l.h2 && c.h1 == "") {
					continue
				}
				t.Run(c.name, func(t *testing.T) {
					before, _ := up.counts()
					var a badAnswer
					if l.h2 {
						a = sendH2(t, addr, c)
					} else {
						a = sendH1(t, addr, l.tls, c)
					}
					t.Logf("TABLE %s | %s | %v", l.name, c.name, a)
					own := c.own1
					if l.h2 {
						own = c.own2
					}
					if l.http2 && own != nil {
						if !l.h2 {
							a.ctype = strings.ToLower(a.ctype)
						}
						if a != *own {
							t.Errorf("%v, want net/http's own %v", a, *own)
						}
						return
					}
					if a.status != c.want {
						t.Errorf("%v, want %d", a, c.want)
					}
					if c.want == 200 {
						return
					}
					if a.ctype != "application/problem+json" {
						t.Errorf("content type %q, want the gateway's application/problem+json", a.ctype)
					}
					if !l.h2 && !a.closed {
						t.Error("the connection stayed open after the client's broken request")
					}
					if after, _ := up.counts(); after != before {
						t.Errorf("the upstream read %d such requests whole", after-before)
					}
				})
			}
			if n := upstreamFailures(g); n != 0 {
				t.Errorf("%v upstream errors and timeouts counted for the clients' faults", n)
			}
			// Still serving.
			a := sendH1(t, addr, l.tls, badCase{h1: "GET /up HTTP/1.1\r\nHost: a\r\n\r\n"})
			if a.status != 200 {
				t.Errorf("after the bad input: %v", a)
			}
		})
	}
}

// upstreamFailures is how many of the only route's exchanges counted as
// upstream errors or timeouts.
func upstreamFailures(g *Gateway) float64 {
	var sum float64
	for _, i := range []int{observe.IdxError, observe.IdxTimeout} {
		var m dto.Metric
		if err := g.core.Snap.Load().Routes[0].UpStatus[i].Write(&m); err != nil {
			panic(err)
		}
		sum += m.GetCounter().GetValue()
	}
	return sum
}
