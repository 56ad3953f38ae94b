package gateway

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// rawH2 is a hand-driven h2c client connection, for what a well-behaved
// client never sends.
type rawH2 struct {
	c  net.Conn
	fr *http2.Framer
	mu sync.Mutex // held while writing a frame
}

// write writes one frame under the lock.
func (r *rawH2) write(f func(*http2.Framer) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return f(r.fr)
}

func dialRawH2(t *testing.T, addr string) *rawH2 {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return &rawH2{c: c, fr: fr}
}

// headerBlock encodes fields (name, value pairs) with HPACK.
func headerBlock(fields ...string) []byte {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for i := 0; i+1 < len(fields); i += 2 {
		enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return buf.Bytes()
}

// drain reads frames until the connection ends, acknowledging the
// server's SETTINGS, and reports a GOAWAY's code and the streams reset.
func (r *rawH2) drain(goaway *atomic.Value, resets *atomic.Int64) {
	for {
		f, err := r.fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				r.write((*http2.Framer).WriteSettingsAck)
			}
		case *http2.GoAwayFrame:
			goaway.Store(f.ErrCode)
		case *http2.RSTStreamFrame:
			resets.Add(1)
		}
	}
}

// Rapid reset (CVE-2023-44487): a client opening and cancelling 10,000
// streams on one connection is charged for them as for requests, so it
// is refused once over its limit and reaches the upstream at most its
// limit's worth; the gateway keeps answering another client meanwhile.
func TestRapidResetIsLimited(t *testing.T) {
	t.Parallel()
	var attackerHits, otherHits atomic.Int64
	up := h1Upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Client") == "attacker" {
			attackerHits.Add(1)
		} else {
			otherHits.Add(1)
		}
		io.WriteString(w, "ok")
	}))
	g, base := startH2Gateway(t, false, `rules:
  - name: per-client
    key: header:X-Client
    policies: [{name: hundred, algorithm: fixed_window, limit: 100, window: 1h}]
routes:
  - {path: /, upstream: "`+up+`"}
`)
	addr := strings.TrimPrefix(base, "http://")
	// Another client, served throughout.
	stop := make(chan struct{})
	other := make(chan error, 1)
	var slowest atomic.Int64
	go func() {
		c := h2cClient()
		for {
			select {
			case <-stop:
				other <- nil
				return
			default:
			}
			t0 := time.Now()
			req, _ := http.NewRequest("GET", base+"/other", nil)
			resp, err := c.Do(req)
			if err != nil {
				other <- err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				other <- &statusError{resp.StatusCode}
				return
			}
			if d := time.Since(t0); int64(d) > slowest.Load() {
				slowest.Store(int64(d))
			}
		}
	}()

	// The attack: HEADERS then RST_STREAM, 10,000 times, on one
	// connection while the gateway keeps it open, on the next when it
	// closes it.
	block := headerBlock(":method", "GET", ":scheme", "http", ":authority", addr, ":path", "/attack", "x-client", "attacker")
	const streams = 10000
	sent, conns := 0, 0
	var goaway atomic.Value
	var resets atomic.Int64
	for sent < streams {
		conns++
		raw := dialRawH2(t, addr)
		drained := make(chan struct{})
		go func() {
			raw.drain(&goaway, &resets)
			close(drained)
		}()
		for i := 0; sent < streams; i++ {
			id := uint32(2*i + 1)
			err := raw.write(func(fr *http2.Framer) error {
				if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndStream: true, EndHeaders: true}); err != nil {
					return err
				}
				return fr.WriteRSTStream(id, http2.ErrCodeCancel)
			})
			if err != nil {
				break // the server closed the connection
			}
			sent++
		}
		raw.c.(*net.TCPConn).CloseWrite()
		select {
		case <-drained:
		case <-time.After(2 * time.Minute):
			t.Fatal("the attacker's connection was not drained in 2 minutes")
		}
		raw.c.Close()
	}
	close(stop)
	if err := <-other; err != nil {
		t.Fatalf("the other client: %v", err)
	}

	// Charged: the attacker is refused now, on a fresh connection.
	req, _ := http.NewRequest("GET", base+"/after", nil)
	req.Header.Set("X-Client", "attacker")
	resp, err := h2cClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 {
		t.Errorf("the attacker after its resets: %d, want 429", resp.StatusCode)
	}
	if n := attackerHits.Load(); n > 100 {
		t.Errorf("%d of the attacker's reset streams reached the upstream (limit 100)", n)
	}
	decided := decisionsOf(g, "per-client", "refused") + decisionsOf(g, "per-client", "allowed")
	calm := protocolErrorsOf(g, "conn_ENHANCE_YOUR_CALM_too_many_early_resets")
	t.Logf("streams sent %d on %d connections (%v closed for too many early resets), decided %v (the rest reset while queued behind max_concurrent_streams, dropped by net/http's HTTP/2 server before any handler ran), reached upstream %d; other client: %d requests, slowest %v",
		sent, conns, calm, decided, attackerHits.Load(), otherHits.Load(), time.Duration(slowest.Load()))
	if decided < 101 {
		t.Errorf("only %v of the attacker's streams were decided", decided)
	}
	// Generous: a loaded test machine stalls anyone for a second; a
	// gateway busy with the attack alone would stall the other client
	// for the whole attack.
	bound := 5 * time.Second
	if raceEnabled {
		bound = 15 * time.Second // the race detector slows every handler
	}
	if slowest.Load() > int64(bound) {
		t.Errorf("the other client waited up to %v during the attack", time.Duration(slowest.Load()))
	}
	if otherHits.Load() == 0 {
		t.Error("the other client was not served during the attack")
	}
}

type statusError struct{ code int }

func (e *statusError) Error() string { return http.StatusText(e.code) }

// protocolErrorsOf reads tollgate_http2_protocol_errors_total for kind.
func protocolErrorsOf(g *Gateway, kind string) float64 {
	mfs, _ := g.m.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "tollgate_http2_protocol_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == kind {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// decisionsOf reads tollgate_decisions_total for rule and outcome.
func decisionsOf(g *Gateway, rule, outcome string) float64 {
	mfs, _ := g.m.reg.Gather()
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "tollgate_decisions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var r, o string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "rule":
					r = l.GetValue()
				case "outcome":
					o = l.GetValue()
				}
			}
			if r == rule && o == outcome {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
