package ja4

import (
	"context"
	"crypto/tls"
	"net"
	"unsafe"
)

// Size is the length of a JA4 fingerprint: "t13d1516h2_8daaf6152771_e5627efa2ab1".
const Size = 36

// Slot holds the fingerprint of one connection's ClientHello, captured
// once during the handshake (Capture) and read by each request after it
// (JA4). Embed it in the net.Conn wrapper a listener hands out and give
// the wrapper a JA4Slot method (Holder), or use Listener. It is 37 bytes
// and allocates nothing.
//
// The slot is written in the handshake, on the goroutine that runs it,
// and only read afterwards: by that goroutine (HTTP/1.1) or by goroutines
// it starts after the handshake (HTTP/2 streams), so no lock is needed.
type Slot struct {
	b [Size]byte
	n uint8
}

// Holder is a connection that holds a Slot.
type Holder interface {
	JA4Slot() *Slot
}

// Capture sets the slot's fingerprint from h, unless it has one: after
// a HelloRetryRequest crypto/tls calls back with the second hello, and
// the fingerprint stays the first's.
func (s *Slot) Capture(h *tls.ClientHelloInfo) {
	if s == nil || s.n != 0 {
		return
	}
	fp := Append(s.b[:0], h)
	if len(fp) == Size && &fp[0] == &s.b[0] {
		s.n = Size
	}
}

// JA4 is the captured fingerprint, or "" before a handshake. The string
// refers to the slot: it is valid while the connection is.
func (s *Slot) JA4() string {
	if s == nil || s.n == 0 {
		return ""
	}
	return unsafe.String(&s.b[0], int(s.n))
}

// maxUnwrap bounds the walk through connection wrappers.
const maxUnwrap = 8

// Find returns the Slot of c or of a connection under it (through
// *tls.Conn and any wrapper with a NetConn method), or nil.
func Find(c net.Conn) *Slot {
	for range maxUnwrap {
		switch t := c.(type) {
		case nil:
			return nil
		case Holder:
			return t.JA4Slot()
		case interface{ NetConn() net.Conn }:
			c = t.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// FromConn is the fingerprint of the connection c (a *tls.Conn over a
// Holder), or "" when it has none: not TLS, not accepted by a Listener
// (or a listener whose connections hold a Slot), or no handshake yet.
func FromConn(c net.Conn) string { return Find(c).JA4() }

// CaptureHello records h's fingerprint in the Slot of the connection it
// arrives on (h.Conn). Call it from the tls.Config's GetConfigForClient
// (or GetCertificate); see Config.
func CaptureHello(h *tls.ClientHelloInfo) {
	if h != nil {
		Find(h.Conn).Capture(h)
	}
}

// Config returns a copy of c whose GetConfigForClient first captures the
// ClientHello's fingerprint (CaptureHello), then calls c's own, if any.
// Serve it over a Listener.
func Config(c *tls.Config) *tls.Config {
	c = c.Clone()
	next := c.GetConfigForClient
	c.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		CaptureHello(h)
		if next != nil {
			return next(h)
		}
		return nil, nil
	}
	return c
}

// Listener wraps each connection a listener accepts in a Conn, which
// holds its fingerprint. For net/http:
//
//	ln = ja4.Listener{Listener: ln}
//	srv := &http.Server{ConnContext: ja4.ConnContext, TLSConfig: ja4.Config(cfg), ...}
//	srv.ServeTLS(ln, certFile, keyFile)
//
// and a handler (httplimit's Request among them) reads ja4.FromContext(r.Context()).
type Listener struct{ net.Listener }

// Accept wraps the next connection.
func (l Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &Conn{Conn: c}, nil
}

// Conn is a connection with a Slot.
type Conn struct {
	net.Conn
	slot Slot
}

// JA4Slot implements Holder.
func (c *Conn) JA4Slot() *Slot { return &c.slot }

// NetConn is the connection under c.
func (c *Conn) NetConn() net.Conn { return c.Conn }

type ctxKey struct{}

// ConnContext is an http.Server's ConnContext: it keeps the Slot of c
// (found under the *tls.Conn, before the handshake fills it) in the
// connection's context, for FromContext.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if s := Find(c); s != nil {
		return context.WithValue(ctx, ctxKey{}, s)
	}
	return ctx
}

// FromContext is the fingerprint of the connection a request's context
// was made for (ConnContext), or "". It allocates nothing.
func FromContext(ctx context.Context) string {
	s, _ := ctx.Value(ctxKey{}).(*Slot)
	return s.JA4()
}
