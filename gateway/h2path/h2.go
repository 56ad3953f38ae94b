package h2path

import (
	"context"
	"crypto/tls"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	//lint:ignore SA1019 the only implementation of Upgrade: h2c (upgradeH2C)
	"golang.org/x/net/http2/h2c"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/gateway/exchange"
	"github.com/tollgate-dev/tollgate/gateway/observe"
	"github.com/tollgate-dev/tollgate/ja4"
	"github.com/tollgate-dev/tollgate/rules"
)

// The HTTP/2 data path: a listener with listen.http2 on is served by
// net/http and its HTTP/2 (x/net/http2, bundled) instead of fasthttp. With TLS, ALPN offers h2
// and http/1.1; without, h2c (prior knowledge, and HTTP/1.1's Upgrade:
// h2c) beside HTTP/1.1. The requests go through the same rule engine
// (via httplimit's steps), the same routes and the same metrics as on
// the HTTP/1.1 path (h2serve.go), then to the upstream through
// httputil.ReverseProxy (h2proxy.go).

// Listener is the net/http server of a listener with listen.http2 on.
type Listener struct {
	hs    *http.Server
	conns connSet // every accepted connection, h2c's hijacked ones included
}

// ALPNProtos are the protocols the TLS listener offers by ALPN.
func ALPNProtos(l config.Listen) []string {
	if l.HTTP2 == config.HTTP2On {
		return []string{"h2", "http/1.1"}
	}
	return []string{"http/1.1"}
}

// newH2Listener builds the net/http server for cfg's listener.
func (g *Server) NewListener(cfg *config.Config) *Listener {
	l := cfg.Listen
	hl := &Listener{}
	hl.conns.plain = l.TLS == nil
	hs := &http.Server{
		Handler: http.HandlerFunc(g.serveStream),
		// The same bounds as the HTTP/1.1 path's: ReadTimeout covers a
		// request's head and body (per stream, on HTTP/2),
		// WriteTimeout a response.
		ReadTimeout:       l.ReadTimeout,
		ReadHeaderTimeout: l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		// HTTP/1.1's head and HTTP/2's header list
		// (SETTINGS_MAX_HEADER_LIST_SIZE) alike, read up to four
		// times max_header_list_size so that serveH2 answers a list
		// over it 431 (tooManyHeaders) rather than Go's HTTP/2 server
		// ending the connection (one field longer than its limit is a
		// COMPRESSION_ERROR).
		MaxHeaderBytes: headerReadLimit(l.MaxHeaderListSize),
		// A request head that stalls past ReadHeaderTimeout is
		// answered 408 (answerSlowHead).
		ConnState: answerSlowHead,
		// The TLS fingerprint of each connection, for the ja4 key part
		// and matcher (httplimit.Request.JA4).
		ConnContext: ja4.ConnContext,
		// net/http's messages quote what clients sent (a TLS
		// handshake's, a preface's): redacted and rate-limited, as
		// fasthttp's are.
		ErrorLog: g.netHTTPLogger(),
	}
	hs.Protocols = new(http.Protocols)
	hs.Protocols.SetHTTP1(true)
	h2conf := &http.HTTP2Config{
		MaxConcurrentStreams: l.MaxConcurrentStreams,
		CountError:           g.M.CountH2Error,
	}
	hs.HTTP2 = h2conf
	if l.TLS != nil {
		hs.Protocols.SetHTTP2(true) // h2 by ALPN
	} else {
		// h2c with prior knowledge: net/http's own, tracked by
		// Shutdown.
		hs.Protocols.SetUnencryptedHTTP2(true)
		// HTTP/1.1's Upgrade: h2c, which RFC 9113 deprecates and
		// net/http does not serve: x/net's h2c takes it (curl --http2
		// on an http:// URL still asks for it).
		hs.Handler = upgradeH2C(hs.Handler, h2conf)
	}
	hl.hs = hs
	return hl
}

// serveStream is serveH2 on a stack grown once, at its top, for HTTP/2:
// net/http runs each stream in a new goroutine, whose small stack the
// refusal path (serveH2, the engine's decision, the header fields) grew
// twice, each time copying every frame on it. Grown here, with five
// frames on it, it is copied once and cheaply (growStack).
func (g *Server) serveStream(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 2 {
		growStack(r.ProtoMajor)
	}
	g.serveH2(w, r)
}

// growStack has a frame as deep as a refusal's path below serveStream
// (measured: the stream goroutine's stack then grows no more), so that
// the runtime grows the stack to fit it in one step. The array is
// indexed by n so that the compiler keeps it.
//
//go:noinline
func growStack(n int) byte {
	var pad [5 << 10]byte
	pad[n%len(pad)] = byte(n)
	return pad[(n>>1)%len(pad)]
}

// upgradeH2C serves HTTP/1.1's Upgrade: h2c with x/net's h2c, which is
// deprecated with the Upgrade itself (RFC 9113 §3.1) but is the only
// implementation: net/http serves h2c with prior knowledge alone. The
// upgraded connections get conf's stream limit and error counter.
// HTTP/2 streams (h2c with prior knowledge, served by net/http itself)
// go straight to h: h2c's handler would only look for an Upgrade field
// that HTTP/2 forbids (net/http resets a stream carrying one), and on
// every refused stream that look and its frames (they grew the stream
// goroutine's stack) cost more than the decision. HTTP/1.1's "PRI *
// HTTP/2.0", h2c's own prior knowledge, still goes to h2c.
func upgradeH2C(h http.Handler, conf *http.HTTP2Config) http.Handler {
	//lint:ignore SA1019 net/http has no Upgrade: h2c (see above)
	h2s := &http2.Server{MaxConcurrentStreams: uint32(conf.MaxConcurrentStreams)}
	//lint:ignore SA1019 as above
	h2s.CountError = conf.CountError
	//lint:ignore SA1019 as above
	up := h2c.NewHandler(h, h2s)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 && r.Method != "PRI" {
			h.ServeHTTP(w, r)
			return
		}
		up.ServeHTTP(w, r)
	})
}

// Serve serves ln until it is closed.
func (hl *Listener) Serve(ln net.Listener) error {
	return hl.hs.Serve(ln)
}

// Shutdown sends GOAWAY to HTTP/2 clients, closes idle HTTP/1.1
// connections, and waits until the requests in flight (counted by
// inFlight) are done or ctx ends.
func (hl *Listener) Shutdown(ctx context.Context, inFlight func() int64) error {
	err := hl.hs.Shutdown(ctx)
	// h2c connections were hijacked from net/http, which no longer
	// waits for them: wait for their requests here.
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for inFlight() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return err
}

// Close closes the server and every connection it accepted.
func (hl *Listener) Close() {
	hl.hs.Close()
	hl.conns.closeAll()
}

// connSet tracks the connections a listener accepted until they close.
type connSet struct {
	mu sync.Mutex
	m  map[*setConn]struct{}
	// plain says the connections carry no TLS: net/http reads and
	// writes them as they are.
	plain bool
}

// listener wraps ln so that its connections are tracked in s.
func (s *connSet) listener(ln net.Listener) net.Listener { return setListener{ln, s} }

func (s *connSet) add(c *setConn) {
	s.mu.Lock()
	if s.m == nil {
		s.m = map[*setConn]struct{}{}
	}
	s.m[c] = struct{}{}
	s.mu.Unlock()
}

func (s *connSet) remove(c *setConn) {
	s.mu.Lock()
	delete(s.m, c)
	s.mu.Unlock()
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	conns := make([]*setConn, 0, len(s.m))
	for c := range s.m {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

type setListener struct {
	net.Listener
	s *connSet
}

// Accept tracks the next connection.
func (l setListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc := &setConn{Conn: c, s: l.s, plain: l.s.plain}
	sc.inHead.Store(true)
	l.s.add(sc)
	return sc, nil
}

type setConn struct {
	net.Conn
	s    *connSet
	once sync.Once
	// inHead says net/http may be reading an HTTP/1.1 request head
	// (answerSlowHead): from the accept, and from each answer on, to
	// the head's end.
	inHead atomic.Bool
	// headTimedOut says a read timed out while inHead.
	headTimedOut atomic.Bool
	// muted drops what is written after the 408 (net/http's own
	// answer to the head it could not finish reading).
	muted atomic.Bool
	// plain says the connection carries no TLS (the listener's
	// connections are read and written as net/http does); first that
	// it has read its first bytes.
	plain bool
	first atomic.Bool
}

// Read reads from the connection, noting a head's read timing out. A
// connection that starts with HTTP/2's preface (h2c with prior
// knowledge) reads no HTTP/1.1 head.
func (c *setConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.plain && n > 0 && c.first.CompareAndSwap(false, true) && n >= 3 && string(p[:3]) == "PRI" {
		c.inHead.Store(false)
	}
	if err != nil && c.inHead.Load() && exchange.IsTimeout(err) {
		c.headTimedOut.Store(true)
	}
	return n, err
}

// Write writes to the connection, unless it was answered 408. On a
// plain connection, what net/http writes while a head it stopped reading
// at its timeout is unfinished is its own answer to that head (a 400 for
// a cut line, when net/http reported no StateActive: it had read the
// bytes while looking for HTTP/2's preface): the 408 goes instead.
func (c *setConn) Write(p []byte) (int, error) {
	if c.muted.Load() {
		return len(p), nil
	}
	if c.plain && c.headTimedOut.Load() && c.inHead.Load() {
		c.muted.Store(true)
		_, err := c.Conn.Write(slowHeadAnswer)
		return len(p), err
	}
	return c.Conn.Write(p)
}

// answerSlowHead is the net/http server's ConnState hook. net/http
// closes a connection whose request head stalls past ReadHeaderTimeout
// without a word (or, when the stall cut a line, answers 400 to what it
// read); the fasthttp path answers 408 (readError). net/http reports
// StateActive, on the connection's goroutine, once it stopped reading a
// head of which it read something and before it answers: when that read
// timed out, the 408 is written then, what net/http writes after it is
// dropped, and net/http closes the connection (setConn.Write covers the
// head net/http read before the hook counts bytes). A connection that
// sent nothing at all is closed without an answer: nothing of a request
// came. HTTP/2 connections (ALPN h2, h2c with prior knowledge) skip the
// hook: a stalled header block has no stream to answer on.
func answerSlowHead(c net.Conn, st http.ConnState) {
	sc, _ := c.(*setConn)
	if tc, ok := c.(*tls.Conn); ok {
		sc, _ = tc.NetConn().(*setConn)
	}
	if sc == nil {
		return
	}
	switch st {
	case http.StateActive:
		if sc.headTimedOut.Load() && !sc.muted.Load() {
			// After the handshake, on the conn's goroutine: writing
			// to a *tls.Conn here takes no lock a read holds.
			c.SetWriteDeadline(time.Now().Add(time.Second))
			c.Write(slowHeadAnswer)
			sc.muted.Store(true)
			return
		}
		sc.inHead.Store(false)
	case http.StateIdle:
		sc.headTimedOut.Store(false)
		sc.inHead.Store(true)
	}
}

// slowHeadAnswer is answerSlowHead's 408, readError's problem+json.
var slowHeadAnswer = func() []byte {
	body := rules.AppendProblem(nil, http.StatusRequestTimeout, exchange.TitleSlowHead, exchange.DetailSlowHead)
	head := "HTTP/1.1 408 Request Timeout\r\nContent-Type: " + rules.ContentTypeProblem +
		"\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n"
	return append([]byte(head), body...)
}()

// NetConn is the connection under c, where the TLS fingerprint is
// (ja4.Find).
func (c *setConn) NetConn() net.Conn { return c.Conn }

// Close closes the connection and forgets it.
func (c *setConn) Close() error {
	c.once.Do(func() { c.s.remove(c) })
	return c.Conn.Close()
}

// netHTTPLog passes net/http's error log lines to the gateway's
// rate-limited warning log, redacted.
type netHTTPLog struct{ g *Server }

// Write logs one line.
func (w netHTTPLog) Write(p []byte) (int, error) {
	msg := observe.RedactQuoted(string(p))
	if w.g.Warns == nil {
		w.g.Log.Warn(msg, slog.String("source", "net/http"))
		return len(p), nil
	}
	w.g.Warns.Warn("net/http", msg, slog.String("source", "net/http"))
	return len(p), nil
}

// netHTTPLogger is the log.Logger for net/http's own messages.
func (g *Server) netHTTPLogger() *log.Logger { return log.New(netHTTPLog{g}, "", 0) }

// Wrap returns ln with the connections it accepts tracked by hl (h2c's
// hijacked ones included), for Shutdown and Close.
func (hl *Listener) Wrap(ln net.Listener) net.Listener { return hl.conns.listener(ln) }
