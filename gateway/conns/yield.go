package conns

import (
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/ja4"
	"github.com/tollgate-dev/tollgate/rules"
)

// YieldListener hands out connections that can be sent to the back of
// the run queue: after a refusal, the connection's goroutine yields the
// processor before it reads that client's next request.
//
// Two things follow. A client being refused waits behind the clients
// that are within their limits, so a flood of refused requests takes its
// turn instead of the turns of others. And the refusal path gets cheaper
// under load: on a keep-alive connection the next request has almost
// never arrived in the microseconds between the end of a response and
// the next read, so that read fails with EAGAIN, and the goroutine parks
// in the network poller until the request comes, two system calls and a
// trip through the poller per request. After a yield the other ready
// connections run first, the request has often arrived by then, and one
// read takes it. That is the batching nginx's event loop gets by reading
// only sockets that are ready. When no other goroutine is ready, the
// yield returns at once.
//
// Allowed requests do not yield: the cost is latency, a refused client
// waits for one turn of the run queue, and that is only paid by clients
// over their limit. BENCHMARKS.md has the measurements.
//
// Its connections also bound each write by send (listen.send_timeout):
// see yieldConn.Write.
type YieldListener struct {
	net.Listener
	Send time.Duration
}

// Accept wraps the next connection.
func (l YieldListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		return &YieldConn{TCPConn: tc, send: l.Send, slack: DeadlineSlack(l.Send)}, nil
	}
	return c, nil
}

// YieldConn yields once before the first Read after yieldBeforeNextRead.
// Only the goroutine serving the connection touches the flag.
//
// It embeds the *net.TCPConn itself, not a net.Conn, so that the TCP
// connection's other methods stay visible: ReadFrom above all, through
// which fasthttp's buffered writer hands a streamed body to the socket
// as it arrives. Behind a plain net.Conn the writer would hold the last
// partial buffer of a body whose upstream pauses.
type YieldConn struct {
	*net.TCPConn
	yield  bool
	Active bool // in the middle of an exchange (fastpath.Server.ConnState)
	// slots is the exchange's decision while it holds concurrency slots,
	// released when the exchange ends (fastpath.Server.ConnState, slots.go).
	slots   rules.Result
	holding bool
	// Upstream is the exchange's place in its client's share of the
	// upstream pool, released when the exchange ends (fastpath.Server.ConnState).
	Upstream ClientHold
	// fingerprint is the TLS ClientHello's JA4, captured in the
	// handshake (ja4.CaptureHello, the TLS listener's
	// GetConfigForClient), read by the ja4 key part and matcher.
	fingerprint ja4.Slot

	// send bounds each write (listen.send_timeout), 0 for no bound;
	// slack is deadlineSlack(send). armed is the write deadline set on
	// the connection, ext the one its server set itself
	// (SetWriteDeadline: listen.write_timeout), in Unix nanoseconds, 0
	// for none. Atomic: net/http's HTTP/2 writes frames from more than
	// one goroutine, one at a time.
	send, slack time.Duration
	armed, ext  atomic.Int64
}

// Write writes b within send from now, as nginx's send_timeout bounds
// each write to a client rather than the whole response: a client that
// takes no byte for that long is cut, one that reads a large download
// slowly but steadily is not. The deadline is set again only once less
// than send is left of it (deadlineSlack, as upstream connections do),
// and never past the server's own (ext).
func (c *YieldConn) Write(b []byte) (int, error) {
	if c.send > 0 {
		if err := c.arm(); err != nil {
			return 0, err
		}
	}
	return c.TCPConn.Write(b)
}

func (c *YieldConn) arm() error {
	now := time.Now().UnixNano()
	a, ext := c.armed.Load(), c.ext.Load()
	if a != 0 && (a >= now+int64(c.send) || a == ext) {
		return nil
	}
	d := now + int64(c.send+c.slack)
	if ext != 0 && ext < d {
		d = ext
	}
	if err := c.TCPConn.SetWriteDeadline(time.Unix(0, d)); err != nil {
		return err
	}
	c.armed.Store(d)
	return nil
}

// ReadFrom copies r to the connection write by write, each bounded by
// send. The TCP connection's own ReadFrom would write past Write (and
// its bound); the gateway's bodies come from upstream connections and
// buffers, never files, so it had no sendfile to offer them.
func (c *YieldConn) ReadFrom(r io.Reader) (int64, error) {
	if c.send == 0 {
		return c.TCPConn.ReadFrom(r)
	}
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	buf := *bp
	var n int64
	for {
		nr, er := r.Read(buf)
		if nr > 0 {
			nw, ew := c.Write(buf[:nr])
			n += int64(nw)
			if ew != nil {
				return n, ew
			}
		}
		if er == io.EOF {
			return n, nil
		}
		if er != nil {
			return n, er
		}
	}
}

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// SetWriteDeadline sets the server's own write deadline (zero for none);
// send's applies within it.
func (c *YieldConn) SetWriteDeadline(t time.Time) error {
	c.noteDeadline(t)
	return c.TCPConn.SetWriteDeadline(t)
}

// SetDeadline sets the read and write deadlines, as SetWriteDeadline
// for writes.
func (c *YieldConn) SetDeadline(t time.Time) error {
	c.noteDeadline(t)
	return c.TCPConn.SetDeadline(t)
}

func (c *YieldConn) noteDeadline(t time.Time) {
	var ext int64
	if !t.IsZero() {
		ext = t.UnixNano()
	}
	c.ext.Store(ext)
	c.armed.Store(0) // the next write sets send's again
}

// Read yields first when asked to, then reads.
func (c *YieldConn) Read(b []byte) (int, error) {
	if c.yield {
		c.yield = false
		runtime.Gosched()
	}
	return c.TCPConn.Read(b)
}

// YieldBeforeNextRead asks the connection serving ctx to yield before it
// reads the next request. Connections the listener did not wrap (a
// test's in-memory ones) are left alone.
func YieldBeforeNextRead(ctx *fasthttp.RequestCtx) {
	if y := AsYieldConn(ctx.Conn()); y != nil {
		y.yield = true
	}
}

// JA4Slot is the connection's TLS fingerprint (ja4.Holder).
func (c *YieldConn) JA4Slot() *ja4.Slot { return &c.fingerprint }
