package gateway

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// readUntil reads frames from raw until stop says so or the connection
// ends (then it returns nil), for at most 10 seconds.
func (r *rawH2) readUntil(t *testing.T, stop func(http2.Frame) bool) http2.Frame {
	t.Helper()
	r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		f, err := r.fr.ReadFrame()
		if err != nil {
			if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
				t.Fatal("no answer in 10s")
			}
			return nil
		}
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			r.write((*http2.Framer).WriteSettingsAck)
			continue
		}
		if stop(f) {
			return f
		}
	}
}

// Bad input on the HTTP/2 path: each is a clean protocol error (a GOAWAY
// or RST_STREAM with the code RFC 9113 names, or net/http's own 400),
// never a panic and never a request at the upstream; the gateway serves
// the next client. What both listeners answer alike (bodies, heads,
// header lists) is TestBadInputTable's.
func TestH2BadInputIsAProtocolError(t *testing.T) {
	var hits atomic.Int64
	up := h2cUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "ok")
	}))
	_, base := startH2Gateway(t, false, `rules:
  - {name: per-ip, policies: [{rate: 100000/s}]}
routes:
  - {path: /, upstream: "`+up+`", protocol: http2}
`)
	addr := strings.TrimPrefix(base, "http://")
	good := func(fields ...string) []string {
		return append([]string{":method", "GET", ":scheme", "http", ":authority", addr, ":path", "/x"}, fields...)
	}
	isGoAway := func(code http2.ErrCode) func(http2.Frame) bool {
		return func(f http2.Frame) bool {
			g, ok := f.(*http2.GoAwayFrame)
			return ok && g.ErrCode == code
		}
	}
	isReset := func(f http2.Frame) bool {
		r, ok := f.(*http2.RSTStreamFrame)
		return ok && r.ErrCode == http2.ErrCodeProtocol
	}
	// A malformed request (RFC 9113 §8.1.1): net/http's HTTP/2 server resets some
	// streams and answers others 400 before any handler runs.
	isStatus := func(code string) func(http2.Frame) bool {
		return func(f http2.Frame) bool {
			h, ok := f.(*http2.MetaHeadersFrame)
			return ok && h.PseudoValue("status") == code
		}
	}
	headers := func(fields []string) func(*http2.Framer) error {
		return func(fr *http2.Framer) error {
			return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: headerBlock(fields...), EndStream: true, EndHeaders: true})
		}
	}
	tests := []struct {
		name  string
		send  func(*http2.Framer) error
		until func(http2.Frame) bool
	}{
		{"malformed SETTINGS (length not a multiple of 6)", func(fr *http2.Framer) error {
			return fr.WriteRawFrame(http2.FrameSettings, 0, 0, []byte{0, 1, 0, 0, 0})
		}, isGoAway(http2.ErrCodeFrameSize)},
		{"DATA on stream 0", func(fr *http2.Framer) error {
			return fr.WriteRawFrame(http2.FrameData, 0, 0, []byte("x"))
		}, isGoAway(http2.ErrCodeProtocol)},
		{"undecodable header block", func(fr *http2.Framer) error {
			return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0xff, 0xff, 0xff, 0xff}, EndStream: true, EndHeaders: true})
		}, isGoAway(http2.ErrCodeCompression)},
		{"missing :path", headers([]string{":method", "GET", ":scheme", "http", ":authority", addr}), isReset},
		{"unknown pseudo-header", headers(good(":protocol-x", "y")), isReset},
		{"pseudo-header after a field", headers([]string{":method", "GET", "x-a", "b", ":scheme", "http", ":authority", addr, ":path", "/x"}), isReset},
		{"upper-case field name", headers(good("X-Upper", "1")), isReset},
		{"connection-specific field", headers(good("connection", "keep-alive")), isStatus("400")},
		{"TE other than trailers", headers(good("te", "gzip")), isStatus("400")},
		{"CONTINUATION flood", func(fr *http2.Framer) error {
			if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: headerBlock(good()...), EndStream: true}); err != nil {
				return err
			}
			chunk := headerBlock("x-flood", strings.Repeat("f", 8000))
			for range 64 { // 512 KB of header block, never ended
				if err := fr.WriteContinuation(1, false, chunk); err != nil {
					return nil // the server cut the connection: fine
				}
			}
			return nil
		}, func(f http2.Frame) bool {
			_, ok := f.(*http2.GoAwayFrame)
			return ok
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := dialRawH2(t, addr)
			if err := raw.write(tc.send); err != nil {
				t.Fatal(err)
			}
			if f := raw.readUntil(t, tc.until); f == nil {
				t.Logf("the connection ended without the expected frame")
				if !strings.Contains(tc.name, "flood") {
					t.Error("want the protocol error's frame before the connection ends")
				}
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d bad requests reached the upstream", n)
	}
	// Still serving.
	resp, err := h2cClient().Get(base + "/after")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || hits.Load() != 1 {
		t.Errorf("after the bad input: %d, upstream hits %d", resp.StatusCode, hits.Load())
	}
}

// A header block that stalls (HEADERS without END_HEADERS, then nothing)
// has no stream to answer 408 on: Go's HTTP/2 server closes the
// connection with a GOAWAY once it has been idle for listen.idle_timeout,
// not at read_timeout (doc.go says so).
func TestH2StalledHeaderBlockClosedAtIdleTimeout(t *testing.T) {
	up := h2cUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	const idle = time.Second
	g := newTestGateway(t, fmt.Sprintf(`listen: {addr: "127.0.0.1:0", http2: on, read_timeout: 100ms, idle_timeout: %v}
admin: {addr: "off"}
reload: {watch: false}
routes: [{path: /, upstream: %q}]
`, idle, up))
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	addr := g.Addr().String()
	raw := dialRawH2(t, addr)
	t0 := time.Now()
	err := raw.write(func(fr *http2.Framer) error {
		// Acknowledged ahead: nothing but CONTINUATION may follow.
		if err := fr.WriteSettingsAck(); err != nil {
			return err
		}
		return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1,
			BlockFragment: headerBlock(":method", "GET", ":scheme", "http", ":authority", addr, ":path", "/x")})
	})
	if err != nil {
		t.Fatal(err)
	}
	raw.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var goaway *http2.GoAwayFrame
	for {
		f, err := raw.fr.ReadFrame()
		if err != nil {
			break
		}
		if g, ok := f.(*http2.GoAwayFrame); ok {
			goaway = g
		}
		if _, ok := f.(*http2.MetaHeadersFrame); ok {
			t.Fatal("an answer to a header block that never ended")
		}
	}
	took := time.Since(t0)
	t.Logf("GOAWAY %v, connection closed after %v", goaway, took)
	if goaway == nil || goaway.ErrCode != http2.ErrCodeNo {
		t.Errorf("GOAWAY %v, want NO_ERROR", goaway)
	}
	if took < idle {
		t.Errorf("closed after %v, before idle_timeout %v", took, idle)
	}
}
