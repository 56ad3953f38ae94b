package conns

import (
	"crypto/tls"
	"io"
	"net"
	"testing"

	"github.com/valyala/fasthttp"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialed := make(chan net.Conn, 1)
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Error(err)
		}
		dialed <- c
	}()
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	b := <-dialed
	if b == nil {
		t.FailNow()
	}
	return a.(*net.TCPConn), b.(*net.TCPConn)
}

// A refusal marks the connection under the request, plain or under TLS,
// and the next read clears the mark.
func TestYieldBeforeNextRead(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(net.Conn) net.Conn
	}{
		{"plain", func(c net.Conn) net.Conn { return c }},
		{"tls", func(c net.Conn) net.Conn { return tls.Server(c, &tls.Config{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := tcpPair(t)
			defer a.Close()
			defer b.Close()
			y := &YieldConn{TCPConn: a}
			var ctx fasthttp.RequestCtx
			ctx.Init2(tc.wrap(y), nil, false)
			YieldBeforeNextRead(&ctx)
			if !y.yield {
				t.Fatal("the refusal did not mark the connection")
			}
			go b.Write([]byte("x"))
			buf := make([]byte, 1)
			if _, err := io.ReadFull(y, buf); err != nil || buf[0] != 'x' {
				t.Fatalf("read %q, %v", buf, err)
			}
			if y.yield {
				t.Fatal("the read did not clear the mark")
			}
		})
	}
}

// A connection the listener did not wrap is left alone.
func TestYieldBeforeNextReadUnwrapped(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	var ctx fasthttp.RequestCtx
	ctx.Init2(a, nil, false)
	YieldBeforeNextRead(&ctx) // must not panic
}

// The gateway's listener wraps every connection it accepts.
func TestYieldListenerWraps(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	yl := YieldListener{Listener: ln}
	defer yl.Close()
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			c.Close()
		}
	}()
	c, err := yl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*YieldConn); !ok {
		t.Fatalf("accepted %T, not a *yieldConn", c)
	}
	// The TCP connection's ReadFrom stays visible: fasthttp's buffered
	// writer streams bodies through it.
	if _, ok := c.(io.ReaderFrom); !ok {
		t.Fatal("the wrapped connection hides ReadFrom")
	}
}
