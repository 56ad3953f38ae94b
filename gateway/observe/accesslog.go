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

// accessLog writes one line per request, as JSON lines or in the combined
// format with the rule and outcome appended. Lines are buffered and
// flushed every second and on Close.
type accessLog struct {
	combined bool
	mu       sync.Mutex
	w        *bufio.Writer
	f        io.WriteCloser
	pool     sync.Pool
	stop     chan struct{}
	done     chan struct{}
}

func openAccessLog(path, format string) (*accessLog, error) {
	var f io.WriteCloser = nopCloser{os.Stdout}
	if path != "-" {
		file, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		f = file
	}
	a := &accessLog{
		combined: format == "combined",
		w:        bufio.NewWriterSize(f, 64<<10),
		f:        f,
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	a.pool.New = func() any { return &entry{} }
	go a.flusher()
	return a, nil
}

type nopCloser struct{ io.Writer }

// Close does nothing: standard output stays open.
func (nopCloser) Close() error { return nil }

func (a *accessLog) flusher() {
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
func (a *accessLog) Close() error {
	close(a.stop)
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	a.w.Flush()
	return a.f.Close()
}

// entry collects one request's fields before the proxy rewrites it.
type entry struct {
	start                          time.Time
	method, host, uri, ua, referer []byte
	proto                          []byte
	rule, outcome                  string
	line                           []byte // the line written, its buffer reused with the entry
}

// begin collects ctx's fields before the proxy rewrites it, the query
// as q says.
func (a *accessLog) begin(ctx *fasthttp.RequestCtx, q *accesslog.Query) *entry {
	e := a.pool.Get().(*entry)
	e.start = time.Now()
	h := &ctx.Request.Header
	e.method = append(e.method[:0], h.Method()...)
	e.host = append(e.host[:0], h.Host()...)
	e.uri = q.AppendURI(e.uri[:0], h.RequestURI())
	e.ua = append(e.ua[:0], h.UserAgent()...)
	e.referer = append(e.referer[:0], h.Referer()...)
	e.proto = append(e.proto[:0], h.Protocol()...)
	e.rule, e.outcome = "", ""
	return e
}

// result records the decisive rule and the outcome.
func (e *entry) result(res *rules.Result) {
	if !res.Matched() {
		return
	}
	e.outcome = res.Outcome.String()
	e.rule = res.Rule()
}

func (a *accessLog) finish(ctx *fasthttp.RequestCtx, e *entry) {
	defer a.pool.Put(e)
	status := ctx.Response.StatusCode()
	// A streamed body's size is its Content-Length (0 when chunked); a
	// buffered one's is known.
	size := len(ctx.Response.Body())
	if ctx.Response.IsBodyStream() {
		size = max(ctx.Response.Header.ContentLength(), 0)
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
func (a *accessLog) write(e *entry, remote []byte, status, size int) {
	// The line is built in the pooled entry's buffer: a stack buffer
	// would escape to the heap through the writer, once per request.
	b := e.line[:0]
	now := time.Now()
	if a.combined {
		b = accesslog.AppendCombined(b, &accesslog.Entry{
			Time: now, Remote: remote, Method: e.method, URI: e.uri, Proto: e.proto,
			Referer: e.referer, UserAgent: e.ua, Status: status, Bytes: size,
			Rule: e.rule, Decision: e.outcome,
		})
	} else {
		b = accesslog.AppendJSON(b, &accesslog.Entry{
			Time: now, Remote: remote, Method: e.method, Host: e.host, URI: e.uri,
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
