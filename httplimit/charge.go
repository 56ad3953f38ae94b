package httplimit

import (
	"bufio"
	"errors"
	"net"
	"net/http"

	"github.com/tollgate-dev/tollgate/rules"
)

// Charge charges res's counting rules (rules.Rule.Count) with the answer
// to r: its status and header fields h (nil when there are none, as for
// an answer that never came: status 0). It does nothing when no rule
// that matched counts (res.Counts() is false), and allocates nothing
// then. The store gets r's context without its cancellation, as Decide
// does: a client that goes away once it has been answered is still
// charged. A store error is the engine's to log; Charge returns it for a
// front end that counts them.
//
// Call it once per admitted request, before the answer goes to the
// client when the front end can (the gateway's paths charge as the
// upstream's header arrives, the middleware as the handler writes its
// status): a client that sends its next request only once it has read
// the answer then finds it charged.
func Charge(r *http.Request, res *rules.Result, status int, h http.Header) error {
	if !res.Counts() {
		return nil
	}
	var ah rules.AnswerHeader
	if h != nil {
		ah = answerHeader(h)
	}
	return res.Charge((*uncancelled)(r), status, ah)
}

// answerHeader is an http.Header as rules.AnswerHeader: a map is a
// pointer, so the conversion to the interface allocates nothing.
type answerHeader http.Header

// Header is the field's first value; name is canonical (AnswerHeader).
func (h answerHeader) Header(name string) (string, bool) {
	vs := h[name]
	if len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

// countingWriter is the ResponseWriter the middleware hands the handler
// of a request some counting rule matched: it charges (Charge) with the
// status the handler writes, once, as it is written (before the client
// can read it), and passes everything through. It keeps
// http.Flusher and http.Hijacker working, and Unwrap lets
// http.ResponseController reach the writer underneath (deadlines, full
// duplex).
type countingWriter struct {
	http.ResponseWriter
	r       *http.Request
	res     *rules.Result
	charged bool
}

// charge charges status once.
func (w *countingWriter) charge(status int, h http.Header) {
	if w.charged {
		return
	}
	w.charged = true
	Charge(w.r, w.res, status, h) //nolint:errcheck // the engine logs a store error; the answer goes on
}

// WriteHeader charges a final status (1xx informational answers, 103
// Early Hints, are not an answer yet; 101 Switching Protocols is), then
// writes it.
func (w *countingWriter) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.charge(code, w.ResponseWriter.Header())
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write charges 200 when the handler writes no status first, as net/http
// answers then.
func (w *countingWriter) Write(p []byte) (int, error) {
	w.charge(http.StatusOK, w.ResponseWriter.Header())
	return w.ResponseWriter.Write(p)
}

// Flush sends the header (200 when none was written: charged so) and
// what is buffered.
func (w *countingWriter) Flush() {
	w.charge(http.StatusOK, w.ResponseWriter.Header())
	http.NewResponseController(w.ResponseWriter).Flush() //nolint:errcheck // http.Flusher has no error
}

// Hijack hands the connection to the handler, which answers on it
// itself (a websocket's 101): the request is charged as 101 Switching
// Protocols when the hijack succeeds and no status was written before.
func (w *countingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.charge(http.StatusSwitchingProtocols, nil)
	}
	return c, rw, err
}

// Unwrap is the writer underneath, for http.ResponseController.
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// serveCounting serves r with next through a countingWriter and charges
// what the handler's answer was once it returns: the status it wrote, or
// 200 when it wrote nothing (net/http answers 200 then). A handler that
// panics is charged as 500 Internal Server Error, when it had written no
// status, before the panic goes on (net/http's server then closes the
// connection or resets the stream: the client gets no answer, and a
// crash is a server error); http.ErrAbortHandler, a deliberate abort, is
// charged as no answer (status 0), as is a handler that ends its
// goroutine (runtime.Goexit).
func serveCounting(next http.Handler, w http.ResponseWriter, r *http.Request, res *rules.Result) {
	cw := &countingWriter{ResponseWriter: w, r: r, res: res}
	ok := false
	defer func() {
		if ok {
			return
		}
		v := recover()
		if v == nil { // runtime.Goexit: no answer
			cw.charge(0, nil)
			return
		}
		status := http.StatusInternalServerError
		if err, isErr := v.(error); isErr && errors.Is(err, http.ErrAbortHandler) {
			status = 0
		}
		cw.charge(status, nil)
		panic(v)
	}()
	next.ServeHTTP(cw, r)
	ok = true
	cw.charge(http.StatusOK, w.Header())
}
