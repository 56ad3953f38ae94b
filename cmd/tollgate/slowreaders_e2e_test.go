package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// slowOrigin is an origin whose /big answers a body of ?size bytes (4
// MiB by default) that it writes for as long as the gateway takes it,
// counting the answers in flight; /small answers at once. Its sockets'
// send buffers are small, so that a response nobody reads stalls within
// a few hundred KiB instead of filling the kernel's buffers.
type slowOrigin struct {
	*httptest.Server
	big atomic.Int64 // /big answers being written
	// bigStarted counts the /big answers begun, ever.
	bigStarted atomic.Int64
}

func newSlowOrigin(t *testing.T) *slowOrigin {
	o := &slowOrigin{}
	o.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/big" {
			io.WriteString(w, "small\n")
			return
		}
		o.big.Add(1)
		o.bigStarted.Add(1)
		defer o.big.Add(-1)
		size := 4 << 20
		if s, err := strconv.Atoi(r.URL.Query().Get("size")); err == nil {
			size = s
		}
		w.Header().Set("Content-Length", strconv.Itoa(size))
		chunk := bytes.Repeat([]byte("x"), 32<<10)
		for size > 0 {
			n := min(size, len(chunk))
			if _, err := w.Write(chunk[:n]); err != nil {
				return
			}
			size -= n
		}
	}))
	o.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if tc, ok := c.(*net.TCPConn); ok && st == http.StateNew {
			tc.SetWriteBuffer(16 << 10)
		}
	}
	o.Start()
	t.Cleanup(o.Close)
	return o
}

// hugeBody is a response larger than the kernel's buffers between the
// origin and a client that does not read can hold (a few MiB on
// loopback): its answer stalls.
const hugeBody = "/big?size=67108864"

// attacker is the address the slow readers connect from: another
// loopback address than the honest client's 127.0.0.1.
var attacker = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}

// slowHTTP1 opens n connections from the attacker's address, each
// sending one request for path and never reading: their receive buffers
// are small, so each response stalls in the gateway. It returns a
// function closing them.
func slowHTTP1(t *testing.T, addr, path string, n int) func() {
	d := &net.Dialer{LocalAddr: attacker, Timeout: 2 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) {
			syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
	}}
	var conns []net.Conn
	for range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("slow reader: %v", err)
		}
		conns = append(conns, c)
		io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: api\r\n\r\n")
	}
	return func() {
		for _, c := range conns {
			c.Close()
		}
	}
}

// slowH2C opens conns h2c connections from the attacker's address, each
// with a flow-control window of 0 for its streams (SETTINGS_INITIAL_
// WINDOW_SIZE), and opens streams streams for path on each: no byte of
// their response bodies can be sent. Frames the gateway sends are read
// and its SETTINGS acknowledged, but no WINDOW_UPDATE is ever sent.
func slowH2C(t *testing.T, addr, path string, conns, streams int) func() {
	var cs []net.Conn
	block := func() []byte {
		var buf bytes.Buffer
		enc := hpack.NewEncoder(&buf)
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "api"}, {":path", path}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		return buf.Bytes()
	}()
	for range conns {
		c, err := (&net.Dialer{LocalAddr: attacker, Timeout: 2 * time.Second}).Dial("tcp", addr)
		if err != nil {
			t.Fatalf("slow h2c reader: %v", err)
		}
		cs = append(cs, c)
		io.WriteString(c, http2.ClientPreface)
		fr := http2.NewFramer(c, c)
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
		for i := range streams {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: block, EndStream: true, EndHeaders: true})
		}
		go func() {
			for {
				f, err := fr.ReadFrame()
				if err != nil {
					return
				}
				if s, ok := f.(*http2.SettingsFrame); ok && !s.IsAck() {
					fr.WriteSettingsAck()
				}
			}
		}()
	}
	return func() {
		for _, c := range cs {
			c.Close()
		}
	}
}

// honestClient returns a client of the gateway over HTTP/1.1 or, when
// h2c, over h2c with prior knowledge.
func honestClient(h2c bool) *http.Client {
	tr := &http.Transport{Protocols: new(http.Protocols)}
	if h2c {
		tr.Protocols.SetUnencryptedHTTP2(true)
	} else {
		tr.Protocols.SetHTTP1(true)
	}
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

// served is how many of the requests an honest client sends over d, 50
// a second, each on time whatever became of the one before, are
// answered 200 (within the client's timeout): a loaded machine delays
// answers but loses none, a starved gateway answers 503 or 504. The
// other outcomes are counted in others, by status or error.
func served(c *http.Client, url string, d time.Duration, others map[string]int) int {
	var mu sync.Mutex
	ok := 0
	var wg sync.WaitGroup
	start := time.Now()
	for i := range int(d / (20 * time.Millisecond)) {
		time.Sleep(time.Until(start.Add(time.Duration(i) * 20 * time.Millisecond)))
		wg.Go(func() {
			outcome := ""
			if resp, err := c.Get(url); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				outcome = strconv.Itoa(resp.StatusCode)
			} else {
				outcome = err.Error()
			}
			mu.Lock()
			defer mu.Unlock()
			if outcome == "200" {
				ok++
			} else {
				others[outcome]++
			}
		})
	}
	wg.Wait()
	return ok
}

// One client whose connections (HTTP/1.1) or streams (h2c, window 0)
// never read their responses holds no more than its share of the
// upstream pool (upstream.max_conns_per_client, an eighth of max_conns
// by default): an honest client keeps being served at its unattacked
// rate. Before, 100 such requests held all 32 connections of the pool
// and the honest client got nothing but 503 or 504.
func TestE2ESlowReadersLeaveThePoolToOthers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		h2c    bool
		attack func(t *testing.T, addr string) func()
	}{
		{"http1", false, func(t *testing.T, addr string) func() { return slowHTTP1(t, addr, hugeBody, 100) }},
		{"h2c", true, func(t *testing.T, addr string) func() { return slowH2C(t, addr, hugeBody, 1, 100) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newSlowOrigin(t)
			h2 := "off"
			if tc.h2c {
				h2 = "on"
			}
			p := startServe(t, `listen: {addr: "127.0.0.1:0", http2: `+h2+`}
admin: {addr: "127.0.0.1:0"}
reload: {watch: false}
upstream: {max_conns: 32, response_timeout: 2s}
routes:
  - {path: /, upstream: "`+o.URL+`"}
`)
			c := honestClient(tc.h2c)
			defer c.CloseIdleConnections()
			others := map[string]int{}
			before := served(c, p.url("/small"), 2*time.Second, others)
			stop := tc.attack(t, p.addr)
			defer stop()
			// The attack holds what it can: its share (4), or, without
			// one, the whole pool.
			eventually(t, "the slow readers to hold upstream connections", func() bool { return o.big.Load() >= 4 })
			during := served(c, p.url("/small"), 2*time.Second, others)
			held := o.big.Load()
			t.Logf("honest client: %d answers in 2s unattacked, %d in 2s under attack (%.0f%%), other outcomes %v; the slow readers hold %d upstream connections of 32",
				before, during, 100*float64(during)/float64(max(before, 1)), others, held)
			if before < 50 {
				t.Fatalf("only %d answers in 2s unattacked: too slow a machine to judge", before)
			}
			if 10*during < 9*before {
				t.Errorf("the honest client got %d answers under attack against %d unattacked: under 90%%", during, before)
			}
			if held > 4 {
				t.Errorf("one client holds %d upstream connections, over its share of 4", held)
			}
			if n, _ := strconv.Atoi(p.metric(`tollgate_upstream_client_share_refused_total{route="/"}`)); n == 0 {
				t.Errorf("no refusal of the client over its share counted")
			}
		})
	}
}

// A client that stops reading is cut after listen.send_timeout, and the
// upstream connection its response held is freed; a client that reads
// a large download slowly but steadily, for longer than that, is not.
func TestE2ESendTimeoutCutsStalledClients(t *testing.T) {
	for _, tc := range []struct {
		name   string
		h2c    bool
		attack func(t *testing.T, addr string) func()
	}{
		{"http1", false, func(t *testing.T, addr string) func() { return slowHTTP1(t, addr, hugeBody, 4) }},
		{"h2c", true, func(t *testing.T, addr string) func() { return slowH2C(t, addr, hugeBody, 1, 4) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newSlowOrigin(t)
			h2 := "off"
			if tc.h2c {
				h2 = "on"
			}
			p := startServe(t, `listen: {addr: "127.0.0.1:0", http2: `+h2+`, send_timeout: 1s}
admin: {addr: "127.0.0.1:0"}
reload: {watch: false}
routes:
  - {path: /, upstream: "`+o.URL+`"}
`)
			// Steady: 2 MiB read 64 KiB every 100ms, about 3s in all,
			// through a receive buffer of 64 KiB. (The kernel wakes a
			// writer blocked on a full socket once about half its send
			// buffer is free, as epoll tells nginx: a client reading
			// less than that per send_timeout is cut. A small receive
			// window keeps the gateway's send buffer small.)
			sc := honestClient(tc.h2c)
			sc.Transport.(*http.Transport).DialContext = (&net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
				return rc.Control(func(fd uintptr) {
					syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10)
				})
			}}).DialContext
			steady := make(chan error, 1)
			go func() {
				resp, err := sc.Get(p.url("/big?size=" + strconv.Itoa(2<<20)))
				if err != nil {
					steady <- err
					return
				}
				defer resp.Body.Close()
				buf := make([]byte, 64<<10)
				n := 0
				for {
					m, err := io.ReadFull(resp.Body, buf)
					n += m
					if err == io.EOF || err == io.ErrUnexpectedEOF {
						break
					}
					if err != nil {
						steady <- err
						return
					}
					time.Sleep(100 * time.Millisecond) // a slow link
				}
				if n != 2<<20 {
					steady <- io.ErrUnexpectedEOF
					return
				}
				steady <- nil
			}()
			stop := tc.attack(t, p.addr)
			defer stop()
			// All five reached the origin (counted as begun, not as held
			// at once: on a loaded machine the first stalled ones can be
			// cut, after send_timeout, before the last one arrives).
			eventually(t, "the stalled clients to hold upstream connections", func() bool { return o.bigStarted.Load() >= 5 })
			start := time.Now()
			// The stalled ones are cut; their sockets stay open.
			eventually(t, "the stalled clients to be cut", func() bool { return o.big.Load() <= 1 })
			t.Logf("stalled clients cut %v after they held their connections", time.Since(start).Round(10*time.Millisecond))
			if err := <-steady; err != nil {
				t.Errorf("the steady reader's download, slower than send_timeout in all, failed: %v", err)
			}
		})
	}
}
