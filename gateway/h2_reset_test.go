package gateway

import (
	"bytes"
	"fmt"
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

	"github.com/tollgate-dev/tollgate/internal/redistest"
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

// attackResets opens streams on connections to addr and resets each at
// once (HEADERS, then RST_STREAM: CVE-2023-44487's rapid reset), on one
// connection while the gateway keeps it open, on the next when it closes
// it, until done says so (asked every batch streams) or max streams were
// sent. It reports the streams sent, the connections used and the
// GOAWAY codes received.
func attackResets(t *testing.T, addr string, block []byte, batch, max int, done func() bool) (sent, conns int, goaways []http2.ErrCode) {
	t.Helper()
	var mu sync.Mutex
	for sent < max && !done() {
		conns++
		raw := dialRawH2(t, addr)
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			for {
				f, err := raw.fr.ReadFrame()
				if err != nil {
					return
				}
				switch f := f.(type) {
				case *http2.SettingsFrame:
					if !f.IsAck() {
						raw.write((*http2.Framer).WriteSettingsAck)
					}
				case *http2.GoAwayFrame:
					mu.Lock()
					goaways = append(goaways, f.ErrCode)
					mu.Unlock()
				}
			}
		}()
		for i := 0; sent < max; i++ {
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
			if sent%batch == 0 && done() {
				break
			}
		}
		raw.c.(*net.TCPConn).CloseWrite()
		<-drained // the gateway closes its end once it has read ours
		raw.c.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	return sent, conns, goaways
}

// Rapid reset (CVE-2023-44487): a client opening and cancelling streams
// on one connection is charged for them as for requests (those it
// resets while they still wait for a handler are dropped by Go's HTTP/2
// server, never decided), so it is refused once over its limit and
// reaches the upstream at most its limit's worth, while another client
// keeps being answered. The attack runs until both are seen (its streams
// decided past the limit, the other client answered during it), not for
// a set time; how many streams that took, and whether Go's server ever
// sent ENHANCE_YOUR_CALM, is logged.
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
	// Another client, served throughout; its first answer comes before
	// the attack starts.
	stop := make(chan struct{})
	other := make(chan error, 1)
	var answered atomic.Int64
	go func() {
		c := h2cClient()
		for {
			select {
			case <-stop:
				other <- nil
				return
			default:
			}
			resp, err := c.Get(base + "/other")
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
			answered.Add(1)
		}
	}()
	for answered.Load() == 0 {
		select {
		case err := <-other:
			t.Fatalf("the other client before the attack: %v", err)
		case <-time.After(time.Millisecond):
		}
	}

	block := headerBlock(":method", "GET", ":scheme", "http", ":authority", addr, ":path", "/attack", "x-client", "attacker")
	decided := func() float64 {
		return decisionsOf(g, "per-client", "refused") + decisionsOf(g, "per-client", "allowed")
	}
	// Decided past the limit (the other client's are 1 a request on its
	// own key), and the other client answered 3 times during the attack.
	base0 := answered.Load()
	const max = 200000
	sent, conns, goaways := attackResets(t, addr, block, 500, max, func() bool {
		return decided()-float64(answered.Load()) > 100 && answered.Load()-base0 >= 3
	})
	close(stop)
	if err := <-other; err != nil {
		t.Fatalf("the other client during the attack: %v", err)
	}
	attackerDecided := decided() - float64(answered.Load())
	calm := protocolErrorsOf(g, "conn_ENHANCE_YOUR_CALM_too_many_early_resets")
	t.Logf("streams sent %d on %d connections (GOAWAYs %v, %v for too many early resets); attacker's decided %v (the rest reset while waiting for a handler, dropped by Go's HTTP/2 server before any rule saw them), reached the upstream %d; the other client answered %d times during the attack",
		sent, conns, goaways, calm, attackerDecided, attackerHits.Load(), answered.Load()-base0)
	if attackerDecided <= 100 || answered.Load()-base0 < 3 {
		t.Fatalf("after %d streams: %v of the attacker's decided, the other client answered %d times", sent, attackerDecided, answered.Load()-base0)
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
}

// What Go's HTTP/2 server does about rapid reset, measured: it runs at
// most max_concurrent_streams handlers for a connection and lets 4 times
// as many more streams wait for one; a connection with more waiting is
// closed with GOAWAY ENHANCE_YOUR_CALM. That happens when the handlers
// cannot keep up, here when every decision waits on a Redis that does
// not answer (its process stopped): a client resetting streams gets the GOAWAY
// after max_concurrent_streams × 5 + 1 of them, whatever the machine's
// speed. Once Redis answers again, everyone is served.
func TestRapidResetEnhanceYourCalm(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	up := h1Upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	const streams = 4
	g := newTestGateway(t, fmt.Sprintf(`listen: {addr: "127.0.0.1:0", http2: on, max_concurrent_streams: %d}
admin: {addr: "off"}
reload: {watch: false}
store: {redis: {url: "redis://%s", timeout: 30s}}
on_error: open
rules:
  - {name: per-ip, consistency: strict, policies: [{algorithm: fixed_window, limit: 1000000, window: 1h}]}
routes:
  - {path: /, upstream: %q}
`, streams, srv.Addr, up))
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	base := "http://" + g.Addr().String()
	addr := g.Addr().String()
	get := func() int {
		resp, err := h2cClient().Get(base + "/ready")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// Ready: a decision made through Redis.
	if code := get(); code != 200 || decisionsOf(g, "per-ip", "allowed") != 1 {
		t.Fatalf("before the pause: %d, %v decisions", code, decisionsOf(g, "per-ip", "allowed"))
	}
	srv.Pause(t)
	frozen := true
	thaw := func() {
		if frozen {
			srv.Resume(t)
			frozen = false
		}
	}
	defer thaw()

	block := headerBlock(":method", "GET", ":scheme", "http", ":authority", addr, ":path", "/attack")
	// One connection: the first max_concurrent_streams streams' handlers
	// wait on Redis, the next 4×max_concurrent_streams wait for a
	// handler, one more is too many.
	const max = 1000
	sent, conns, goaways := attackResets(t, addr, block, 1, max, func() bool {
		return protocolErrorsOf(g, "conn_ENHANCE_YOUR_CALM_too_many_early_resets") > 0
	})
	calm := protocolErrorsOf(g, "conn_ENHANCE_YOUR_CALM_too_many_early_resets")
	t.Logf("Redis paused, max_concurrent_streams %d: %d streams sent on %d connections, GOAWAYs %v, %v closed for too many early resets",
		streams, sent, conns, goaways, calm)
	if calm != 1 || conns != 1 || len(goaways) != 1 || goaways[0] != http2.ErrCodeEnhanceYourCalm {
		t.Fatalf("want one connection closed with ENHANCE_YOUR_CALM, got %v on %d connections (GOAWAYs %v)", calm, conns, goaways)
	}
	if sent < 5*streams+1 {
		t.Errorf("ENHANCE_YOUR_CALM after %d streams: Go's server allows %d", sent, 5*streams)
	}
	thaw()
	if code := get(); code != 200 {
		t.Errorf("once Redis answers again: %d", code)
	}
}

type statusError struct{ code int }

func (e *statusError) Error() string { return http.StatusText(e.code) }

// protocolErrorsOf reads tollgate_http2_protocol_errors_total for kind.
func protocolErrorsOf(g *Gateway, kind string) float64 {
	mfs, _ := g.core.M.Reg.Gather()
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
	mfs, _ := g.core.M.Reg.Gather()
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
