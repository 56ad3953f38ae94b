package observe

import (
	"bufio"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/accesslog"
	"github.com/tollgate-dev/tollgate/rules"
)

// AccessLog writes one line per request, as JSON lines or in the combined
// format with the rule and outcome appended. Lines are buffered and
// flushed every second and on Close.
type AccessLog struct {
	combined bool
	mu       sync.Mutex
	w        *bufio.Writer
	f        io.WriteCloser
	pool     sync.Pool
	stop     chan struct{}
	done     chan struct{}
}

func OpenAccessLog(path, format string) (*AccessLog, error) {
	var f io.WriteCloser = nopCloser{os.Stdout}
	if path != "-" {
		file, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		f = file
	}
	a := &AccessLog{
		combined: format == "combined",
		w:        bufio.NewWriterSize(f, 64<<10),
		f:        f,
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	a.pool.New = func() any { return &Entry{} }
	go a.flusher()
	return a, nil
}

type nopCloser struct{ io.Writer }

// Close does nothing: standard output stays open.
func (nopCloser) Close() error { return nil }

func (a *AccessLog) flusher() {
	defer close(a.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			a.mu.Lock()
			a.w.Flush()
			a.mu.Unlock()
		case <-a.stop:
			return
		}
	}
}

// Close flushes and closes the log.
func (a *AccessLog) Close() error {
	close(a.stop)
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	a.w.Flush()
	return a.f.Close()
}

// Entry collects one request's fields before the proxy rewrites it.
type Entry struct {
	start                          time.Time
	Method, host, Uri, ua, referer []byte
	Proto                          []byte
	rule, outcome                  string
	left                           bool   // ClientLeft: logged 499
	line                           []byte // the line written, its buffer reused with the entry
}

// Begin collects ctx's fields before the proxy rewrites it, the query
// as q says.
func (a *AccessLog) Begin(ctx *fasthttp.RequestCtx, q *accesslog.Query) *Entry {
	e := a.pool.Get().(*Entry)
	e.start = time.Now()
	h := &ctx.Request.Header
	e.Method = append(e.Method[:0], h.Method()...)
	e.host = append(e.host[:0], h.Host()...)
	e.Uri = q.AppendURI(e.Uri[:0], h.RequestURI())
	e.ua = append(e.ua[:0], h.UserAgent()...)
	e.referer = append(e.referer[:0], h.Referer()...)
	e.Proto = append(e.Proto[:0], h.Protocol()...)
	e.rule, e.outcome, e.left = "", "", false
	return e
}

// Result records the decisive rule and the outcome.
func (e *Entry) Result(res *rules.Result) {
	if !res.Matched() {
		return
	}
	e.outcome = res.Outcome.String()
	e.rule = res.Rule()
}

// ClientLeft records that the request's client went away during its
// delay, so that it was not served: its line says 499 (nginx's "client
// closed request") and 0 bytes, whatever the gateway wrote to the
// connection no one reads (its 503, rules.DetailDelayEnded).
func (e *Entry) ClientLeft() { e.left = true }

// StatusClientClosed is the status the access log gives a request whose
// client went away before it was served (Entry.ClientLeft): nginx's 499,
// which no HTTP answer has.
const StatusClientClosed = 499

// Finish writes the line of the request of ctx, answered in
// ctx.Response.
func (a *AccessLog) Finish(ctx *fasthttp.RequestCtx, e *Entry) {
	defer a.pool.Put(e)
	status := ctx.Response.StatusCode()
	// A streamed body's size is its Content-Length (0 when chunked); a
	// buffered one's is known.
	size := len(ctx.Response.Body())
	if ctx.Response.IsBodyStream() {
		size = max(ctx.Response.Header.ContentLength(), 0)
	}
	if e.left {
		status, size = StatusClientClosed, 0
	}
	var rbuf [64]byte
	remote := rbuf[:0]
	if addr, ok := ctx.RemoteAddr().(*net.TCPAddr); ok {
		remote = addr.AddrPort().Addr().Unmap().AppendTo(remote)
	}
	a.write(e, remote, status, size)
}

// write writes e's line, with the client's address and the response's
// status and body size.
func (a *AccessLog) write(e *Entry, remote []byte, status, size int) {
	// The line is built in the pooled entry's buffer: a stack buffer
	// would escape to the heap through the writer, once per request.
	b := e.line[:0]
	now := time.Now()
	if a.combined {
		b = accesslog.AppendCombined(b, &accesslog.Entry{
			Time: now, Remote: remote, Method: e.Method, URI: e.Uri, Proto: e.Proto,
			Referer: e.referer, UserAgent: e.ua, Status: status, Bytes: size,
			Rule: e.rule, Decision: e.outcome,
		})
	} else {
		b = accesslog.AppendJSON(b, &accesslog.Entry{
			Time: now, Remote: remote, Method: e.Method, Host: e.host, URI: e.Uri,
			UserAgent: e.ua, Status: status, Bytes: size, Duration: now.Sub(e.start),
			Rule: e.rule, Decision: e.outcome,
		})
	}
	a.mu.Lock()
	a.w.Write(b)
	a.mu.Unlock()
	if cap(b) <= 64<<10 {
		e.line = b // a huge line's buffer is not kept
	}
}
