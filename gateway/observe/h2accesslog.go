package observe

import (
	"net/http"
	"net/netip"
	"time"

	"github.com/tollgate-dev/tollgate/accesslog"
)

// The access log on the net/http path: the same lines as the fasthttp
// path's (accesslog.go), the protocol in the combined format's request
// line being the request's (HTTP/1.1 or HTTP/2.0).

// BeginH2 collects r's fields before the proxy rewrites it, the query
// as q says.
func (a *AccessLog) BeginH2(r *http.Request, q *accesslog.Query) *Entry {
	e := a.pool.Get().(*Entry)
	e.start = time.Now()
	e.Method = append(e.Method[:0], r.Method...)
	e.host = append(e.host[:0], r.Host...)
	e.Uri = q.AppendURIString(e.Uri[:0], r.RequestURI)
	e.ua = append(e.ua[:0], r.Header.Get("User-Agent")...)
	e.referer = append(e.referer[:0], r.Header.Get("Referer")...)
	e.Proto = append(e.Proto[:0], r.Proto...)
	e.rule, e.outcome, e.left = "", "", false
	return e
}

// FinishH2 writes the line of r, answered through w.
func (a *AccessLog) FinishH2(e *Entry, r *http.Request, w *AccessWriter) {
	defer a.pool.Put(e)
	var rbuf [64]byte
	remote := rbuf[:0]
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		remote = ap.Addr().Unmap().AppendTo(remote)
	}
	status, size := w.status, w.bytes
	if status == 0 {
		status = http.StatusOK // nothing written: net/http sends 200
	}
	if e.left {
		status, size = StatusClientClosed, 0
	}
	a.write(e, remote, status, size)
}

// AccessWriter is a ResponseWriter that counts the final status and the
// body bytes for the access log. Unwrap lets http.ResponseController
// (ReverseProxy's flushes) reach the writer under it.
type AccessWriter struct {
	http.ResponseWriter
	status, bytes int
}

// WriteHeader records the final status (not a 1xx) and writes it.
func (w *AccessWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write counts b and writes it.
func (w *AccessWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

// Unwrap returns the writer under w.
func (w *AccessWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
