package main

// Two proxies on event loops, the ceiling of that design for the
// proxy comparison. Each client connection gets its own keep-alive
// connection to the origin, registered with a gnet client's event
// loops; a request goes upstream and its response back with no
// goroutine in between. They parse and rewrite each message with
// fasthttp (as tollgate does) and forward heads and Content-Length
// bodies only: enough for this benchmark, not a product.
//   - gnet-proxy (-proxy) writes to the other connection's socket directly
//     from whichever loop holds the message: nginx's cost, but the socket
//     may belong to another loop, which can close it meanwhile (and the
//     descriptor number be reused): unsafe outside a benchmark.
//   - gnet-proxy-safe (-proxy -safe) hands each message to the loop owning
//     the destination (AsyncWrite: a queue and a wake-up), which is what a
//     product on gnet would have to do.

import (
	"bufio"
	"bytes"
	"log"

	"github.com/panjf2000/gnet/v2"
	"github.com/valyala/fasthttp"
	"golang.org/x/sys/unix"
)

// pair is a client connection and its own upstream connection.
type pair struct {
	client, up gnet.Conn
	req        fasthttp.Request
	resp       fasthttp.Response
	rd         bytes.Reader
	br         *bufio.Reader
	out        bytes.Buffer
	bw         *bufio.Writer
}

type proxyFront struct {
	gnet.BuiltinEventEngine
	cli  *gnet.Client
	safe bool
}

type proxyBack struct {
	gnet.BuiltinEventEngine
	safe bool
}

// send writes msg to c: from this loop into c's socket, or through c's
// own loop when safe.
func send(c gnet.Conn, msg []byte, safe bool) {
	if safe {
		c.AsyncWrite(append([]byte(nil), msg...), nil)
		return
	}
	for len(msg) > 0 {
		n, err := unix.Write(c.Fd(), msg)
		if err != nil {
			log.Print(err)
			return
		}
		msg = msg[n:]
	}
}

func (f *proxyFront) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	p := &pair{client: c}
	p.br = bufio.NewReaderSize(&p.rd, 4096)
	p.bw = bufio.NewWriterSize(&p.out, 4096)
	up, err := f.cli.DialContext("tcp", "127.0.0.1:18081", p)
	if err != nil {
		log.Print(err)
		return nil, gnet.Close
	}
	p.up = up
	c.SetContext(p)
	return nil, gnet.None
}

func (f *proxyFront) OnClose(c gnet.Conn, _ error) gnet.Action {
	if p, ok := c.Context().(*pair); ok {
		p.up.Close()
	}
	return gnet.None
}

// OnTraffic forwards a complete request head upstream (the benchmark's
// requests have no body and are not pipelined).
func (f *proxyFront) OnTraffic(c gnet.Conn) gnet.Action {
	p := c.Context().(*pair)
	buf, _ := c.Peek(-1)
	i := bytes.Index(buf, []byte("\r\n\r\n"))
	if i < 0 {
		return gnet.None
	}
	p.rd.Reset(buf[:i+4])
	p.br.Reset(&p.rd)
	if err := p.req.Read(p.br); err != nil {
		return gnet.Close
	}
	c.Discard(i + 4)
	p.req.Header.Set("X-Forwarded-For", "127.0.0.1")
	p.out.Reset()
	p.bw.Reset(&p.out)
	p.req.Write(p.bw)
	p.bw.Flush()
	send(p.up, p.out.Bytes(), f.safe)
	return gnet.None
}

// OnTraffic sends a complete response back to the client.
func (b *proxyBack) OnTraffic(u gnet.Conn) gnet.Action {
	p := u.Context().(*pair)
	buf, _ := u.Peek(-1)
	p.rd.Reset(buf)
	p.br.Reset(&p.rd)
	if err := p.resp.Read(p.br); err != nil {
		return gnet.None // not complete yet
	}
	u.Discard(len(buf) - p.rd.Len() - p.br.Buffered())
	p.out.Reset()
	p.bw.Reset(&p.out)
	p.resp.Write(p.bw)
	p.bw.Flush()
	send(p.client, p.out.Bytes(), b.safe)
	return gnet.None
}

func runProxy(addr string, safe bool) error {
	cli, err := gnet.NewClient(&proxyBack{safe: safe}, gnet.WithMulticore(true))
	if err != nil {
		return err
	}
	if err := cli.Start(); err != nil {
		return err
	}
	return gnet.Run(&proxyFront{cli: cli, safe: safe}, "tcp://"+addr, gnet.WithMulticore(true))
}
