package conns

import (
	"net/http"
	"time"
)

// listen.send_timeout bounds each write to a client, as nginx's
// send_timeout does, instead of the whole response (write_timeout's
// bound, which fasthttp sets once before writing a response and net/http
// once per request or stream: either would cut a large download read
// slowly but steadily). A connection's writes are bounded by the
// listener's connections themselves (yieldConn.Write), which covers
// HTTP/1.1 on both data paths, TLS, WebSocket tunnels and HTTP/2's
// frames when the client's socket is full. An HTTP/2 stream whose client
// keeps its flow-control window shut writes nothing to the connection
// and blocks only its handler: streamSend bounds those writes.

// StreamSend is an HTTP/2 stream's response writer whose every write and
// flush must complete within send: before each, it moves the stream's
// write deadline (http.ResponseController, which net/http keeps per
// stream) to send from now when less than that is left, so that a
// stream whose client grants no window is reset once a write has waited
// that long, and the upstream connection its response held is freed.
// Only one goroutine writes at a time (ReverseProxy's flusher takes a
// lock for its flushes).
type StreamSend struct {
	http.ResponseWriter
	rc          *http.ResponseController
	send, slack time.Duration
	armed       int64 // the deadline set, Unix nanoseconds; 0 for none
}

// Start makes w the bounded writer over rw.
func (w *StreamSend) Start(rw http.ResponseWriter, send time.Duration) {
	*w = StreamSend{ResponseWriter: rw, rc: http.NewResponseController(rw), send: send, slack: DeadlineSlack(send)}
}

func (w *StreamSend) arm() {
	if w.send <= 0 {
		return
	}
	now := time.Now().UnixNano()
	if w.armed >= now+int64(w.send) {
		return
	}
	d := now + int64(w.send+w.slack)
	if w.rc.SetWriteDeadline(time.Unix(0, d)) != nil {
		w.send = 0 // not supported under rw: nothing to bound
		return
	}
	w.armed = d
}

// Write writes b within send.
func (w *StreamSend) Write(b []byte) (int, error) {
	w.arm()
	return w.ResponseWriter.Write(b)
}

// FlushError flushes within send.
func (w *StreamSend) FlushError() error {
	w.arm()
	return w.rc.Flush()
}

// Unwrap returns the writer under w, for http.ResponseController.
func (w *StreamSend) Unwrap() http.ResponseWriter { return w.ResponseWriter }
