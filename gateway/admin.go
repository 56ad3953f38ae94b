package gateway

import (
	"net/http"
	"net/http/pprof"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tollgate-dev/tollgate/gateway/dashboard"
)

// adminHandler serves the admin listener: /metrics, /healthz, /readyz,
// /config, /debug/pprof/ and the live dashboard at / (package dashboard).
func (g *Gateway) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g.core.M.Reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !g.ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("shutting down\n"))
			return
		}
		if why := g.unready(); why != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(why + "\n"))
			return
		}
		w.Write([]byte("ready\n"))
	})
	mux.HandleFunc("GET /config", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(g.core.Snap.Load().Shown)
	})
	// Profiles, for operators; the admin listener is loopback by default.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	dashboard.Register(mux, g.dash.Hub, g.dash.Enabled)
	return mux
}

// unready says why the gateway, though serving, should get no traffic:
// Redis is down (not reached yet, or behind the open breaker) and some
// enforced rule on it has the failure mode closed, so it refuses every
// request it matches; or the gossip node is not warm yet and some
// enforced gossip rule has the failure mode closed. "" when ready. A failure mode of open or local keeps
// the gateway ready: it answers, only less exactly.
func (g *Gateway) unready() string {
	snap := g.core.Snap.Load()
	if cold := snap.RefusesWhileCold; len(cold) > 0 && !g.stores.Gossip().Warm() {
		return "gossip is not warm (no state exchange with the fleet yet) and these rules refuse until it is (on_error: closed): " + strings.Join(cold, ", ")
	}
	closed := snap.RefusesWithoutRedis
	if len(closed) == 0 || g.stores.Redis().Stats().Up() {
		return ""
	}
	return "redis is down and these rules refuse while it is (on_error: closed): " + strings.Join(closed, ", ")
}
