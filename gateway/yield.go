package gateway

import (
	"github.com/tollgate-dev/tollgate/rules"
	"net"
	"runtime"

	"github.com/valyala/fasthttp"
)

// yieldListener hands out connections that can be sent to the back of
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
type yieldListener struct{ net.Listener }

// Accept wraps the next connection.
func (l yieldListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		return &yieldConn{TCPConn: tc}, nil
	}
	return c, nil
}

// yieldConn yields once before the first Read after yieldBeforeNextRead.
// Only the goroutine serving the connection touches the flag.
//
// It embeds the *net.TCPConn itself, not a net.Conn, so that the TCP
// connection's other methods stay visible: ReadFrom above all, through
// which fasthttp's buffered writer hands a streamed body to the socket
// as it arrives. Behind a plain net.Conn the writer would hold the last
// partial buffer of a body whose upstream pauses.
type yieldConn struct {
	*net.TCPConn
	yield  bool
	active bool // in the middle of an exchange (connState)
	// slots is the exchange's decision while it holds concurrency slots,
	// released when the exchange ends (connState, slots.go).
	slots   rules.Result
	holding bool
}

// Read yields first when asked to, then reads.
func (c *yieldConn) Read(b []byte) (int, error) {
	if c.yield {
		c.yield = false
		runtime.Gosched()
	}
	return c.TCPConn.Read(b)
}

// yieldBeforeNextRead asks the connection serving ctx to yield before it
// reads the next request. Connections the listener did not wrap (a
// test's in-memory ones) are left alone.
func yieldBeforeNextRead(ctx *fasthttp.RequestCtx) {
	if y := asYieldConn(ctx.Conn()); y != nil {
		y.yield = true
	}
}
