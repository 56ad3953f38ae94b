package h2path

import (
	"net/http"

	"github.com/tollgate-dev/tollgate/gateway/conns"
	"github.com/tollgate-dev/tollgate/gateway/exchange"
	"github.com/tollgate-dev/tollgate/httplimit"
)

// holdUpstreamH2 is holdUpstream on the net/http path: the place is held
// until release is called, when the handler returns.
func holdUpstreamH2(w http.ResponseWriter, r *http.Request, s *exchange.Snapshot, rt *exchange.Route) (conns.ClientHold, bool) {
	if rt.Holds == nil {
		return conns.ClientHold{}, true
	}
	p, ok := s.Nets.Of(httplimit.Request{Req: r})
	if !ok {
		return conns.ClientHold{}, true
	}
	if !rt.Holds.Acquire(p, rt.Share) {
		rt.ShareRefused.Inc()
		problemH2(w, r, http.StatusServiceUnavailable, "Service Unavailable", exchange.ClientShareDetail)
		return conns.ClientHold{}, false
	}
	return rt.Holds.Taken(p), true
}
