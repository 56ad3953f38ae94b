package exchange

import (
	"errors"
	"net/http"
	"time"

	"github.com/valyala/fasthttp"
)

// BeginMeters counts an exchange with rt's upstream in flight.
func BeginMeters(rt *Route) {
	for _, m := range rt.Meters {
		m.Begin()
	}
}

// EndMeters ends it: how long the upstream took to answer, whether it
// failed (no response, or a 5xx) and the header fields the meters read.
// An exchange that did not end by the upstream's doing (originsOutcome)
// is cancelled instead: the origin signals measure the origin, and an
// answer the gateway made itself (400 for a broken request body, 413,
// 503 for its own connection limit) says nothing about it.
func EndMeters(rt *Route, took time.Duration, resp *fasthttp.Response, err, bodyErr error) {
	if !OriginsOutcome(err, bodyErr) {
		cancelMeters(rt)
		return
	}
	failed := err != nil || resp.StatusCode() >= 500
	for _, m := range rt.Meters {
		var h []byte
		if err == nil && m.Header() != "" {
			h = resp.Header.Peek(m.Header())
		}
		m.End(took, failed, h)
	}
}

// OriginsOutcome reports whether an exchange with the upstream that
// ended with err (nil: a response) was the upstream's doing: its
// response, or a failure to connect to it or to get its answer in
// time. It was not when the client's request body failed (bodyErr:
// malformed, cut short, stalled, over listen.max_request_body; the
// client gets 400, 408 or 413), or when the gateway's own limit on
// upstream connections refused it (503).
func OriginsOutcome(err, bodyErr error) bool {
	return err == nil || bodyErr == nil && !errors.Is(err, fasthttp.ErrNoFreeConns)
}

// cancelMeters ends an exchange beginMeters counted without measuring it.
func cancelMeters(rt *Route) {
	for _, m := range rt.Meters {
		m.Cancel()
	}
}

// EndMetersH2 is endMeters for the net/http path: the upstream's
// response resp, or, with resp nil, a failure to get one, measured
// unless it was the client's (clients: its request body failed, or it
// went away before the answer).
func EndMetersH2(rt *Route, took time.Duration, resp *http.Response, clients bool) {
	if resp == nil && clients {
		cancelMeters(rt)
		return
	}
	failed := resp == nil || resp.StatusCode >= 500
	for _, m := range rt.Meters {
		var h []byte
		if name := m.Header(); resp != nil && name != "" {
			if v := resp.Header.Get(name); v != "" {
				h = []byte(v)
			}
		}
		m.End(took, failed, h)
	}
}
