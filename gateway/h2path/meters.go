package h2path

import (
	"errors"
	"net/http"
	"time"

	"github.com/tollgate-dev/tollgate/gateway/exchange"
)

// endMeters ends the net/http path's exchange in rt's meters with the
// upstream's response resp, or, with resp nil, a failure: measured when
// it was the upstream's, cancelled when it was the client's (clients).
// Only the handler's goroutine calls it; the first call counts.
func (ex *h2Exchange) endMeters(resp *http.Response, clients bool) {
	if !ex.metering {
		return
	}
	ex.metering = false
	exchange.EndMetersH2(ex.rt, time.Since(ex.start), resp, clients)
}

// proxyErrorH2 is the net/http path's ReverseProxy.ErrorHandler: it ends
// the failed exchange in the meters, as the client's when its request
// body failed (h2Body), was over listen.max_request_body, or the client
// went away before the answer (a stream reset, a connection closed), as
// the upstream's otherwise (unreachable, or no answer within
// upstream.response_timeout), then answers it (upstreamErrorH2).
func (g *Server) proxyErrorH2(w http.ResponseWriter, r *http.Request, err error) {
	if ex := exchangeOf(r); ex != nil && ex.metering {
		var tooLarge *http.MaxBytesError
		ex.endMeters(nil, errors.As(err, &tooLarge) || ex.body.failed() != nil ||
			!ex.timedOut.Load() && r.Context().Err() != nil)
	}
	g.upstreamErrorH2(w, r, err)
}
