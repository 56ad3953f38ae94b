package dashboard

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The events a Hub carries, as the page reads them.
const (
	// EventHello is sent first on every connection: the history of the
	// decision rates and the running rules in words.
	EventHello = "hello"
	// EventFrame is one period's figures.
	EventFrame = "frame"
)

// Hub fans events out to the open dashboards. A slow page misses frames
// rather than slowing the others or the publisher: each has a queue of
// one. The zero Hub is not usable; make one with NewHub.
type Hub struct {
	hello   func() []byte
	viewers atomic.Int64

	mu   sync.Mutex
	subs map[chan []byte]struct{}
	done chan struct{}
}

// NewHub returns a hub whose connections start with the EventHello data
// hello returns.
func NewHub(hello func() []byte) *Hub {
	return &Hub{hello: hello, subs: map[chan []byte]struct{}{}, done: make(chan struct{})}
}

// Viewers is the number of open event streams.
func (h *Hub) Viewers() int { return int(h.viewers.Load()) }

// Publish sends one event to every open stream, dropping it for a stream
// whose previous event is still unsent. data is one line of JSON.
func (h *Hub) Publish(event string, data []byte) {
	msg := make([]byte, 0, len(event)+len(data)+16)
	msg = append(msg, "event: "...)
	msg = append(msg, event...)
	msg = append(msg, "\ndata: "...)
	msg = append(msg, data...)
	msg = append(msg, "\n\n"...)
	h.mu.Lock()
	for c := range h.subs {
		select {
		case c <- msg:
		default:
		}
	}
	h.mu.Unlock()
}

// Close ends every open stream.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.done:
	default:
		close(h.done)
	}
}

// ServeHTTP streams events as text/event-stream until the client goes or
// the hub closes.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	c := make(chan []byte, 1)
	h.mu.Lock()
	select {
	case <-h.done:
		h.mu.Unlock()
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	default:
	}
	h.subs[c] = struct{}{}
	h.mu.Unlock()
	h.viewers.Add(1)
	defer func() {
		h.mu.Lock()
		delete(h.subs, c)
		h.mu.Unlock()
		h.viewers.Add(-1)
	}()
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write([]byte("retry: 2000\nevent: " + EventHello + "\ndata: " + string(h.hello()) + "\n\n")) {
		return
	}
	for {
		select {
		case msg := <-c:
			if !write(msg) {
				return
			}
		case <-r.Context().Done():
			return
		case <-h.done:
			return
		}
	}
}
