package adapt

import (
	"errors"
	"log/slog"
	"math"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/adaptive"
	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/rules"
)

// controllers are the gateway's running adaptive controllers. A reload
// keeps a controller whose settings did not change (and so its factor),
// replaces one that changed and stops one that went.
type controllers struct {
	mu      sync.Mutex
	running map[string]*adaptive.Loop
	m       *adaptiveMetrics
	log     *slog.Logger
	fleets  map[string]adaptive.Fleet // by tier (adaptive.FleetRedis, FleetGossip), when the store has it
}

// prepare returns the loops cfg needs: the running ones whose settings
// are unchanged, new (unstarted) ones for the others.
func (cs *controllers) prepare(cfg *config.Config) (map[string]*adaptive.Loop, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := map[string]*adaptive.Loop{}
	for _, s := range cfg.AdaptiveSettings() {
		if l := cs.running[s.Name]; l != nil && reflect.DeepEqual(*l.Settings(), s) {
			out[s.Name] = l
			continue
		}
		l, err := adaptive.NewLoop(adaptive.LoopConfig{
			Settings: s, Fleet: cs.fleets[s.FleetTier], Observer: cs.m, Logger: cs.log,
		})
		if err != nil {
			return nil, err
		}
		out[s.Name] = l
	}
	return out, nil
}

// commit makes loops the running set: it starts the new ones and stops
// those no longer in it. Called once the snapshot that uses loops is
// in place.
func (cs *controllers) commit(loops map[string]*adaptive.Loop) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for name, l := range cs.running {
		if loops[name] != l {
			l.Close()
		}
	}
	for name, l := range loops {
		if cs.running[name] != l {
			cs.m.reset(l.Settings())
			l.Start()
		}
	}
	cs.running = loops
}

// closeAll stops every loop.
func (cs *controllers) closeAll() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, l := range cs.running {
		l.Close()
	}
	cs.running = nil
}

// scales is the rule engine's view of loops.
func scales(loops map[string]*adaptive.Loop) rules.ScaleFunc {
	return func(name string) rules.Scale {
		if l := loops[name]; l != nil {
			return l.Factor()
		}
		return nil
	}
}

// metersFor returns the meters of the loops whose upstream is upstream.
func metersFor(loops map[string]*adaptive.Loop, upstream string) []*adaptive.Meter {
	var out []*adaptive.Meter
	for _, l := range loops {
		if m := l.Meter(); m != nil && l.Settings().Upstream == upstream {
			out = append(out, m)
		}
	}
	return out
}

// beginMeters counts an exchange with rt's upstream in flight.
func beginMeters(rt *route) {
	for _, m := range rt.meters {
		m.Begin()
	}
}

// endMeters ends it: how long the upstream took to answer, whether it
// failed (no response, or a 5xx) and the header fields the meters read.
// An exchange that did not end by the upstream's doing (originsOutcome)
// is cancelled instead: the origin signals measure the origin, and an
// answer the gateway made itself (400 for a broken request body, 413,
// 503 for its own connection limit) says nothing about it.
func endMeters(rt *route, took time.Duration, resp *fasthttp.Response, err, bodyErr error) {
	if !originsOutcome(err, bodyErr) {
		cancelMeters(rt)
		return
	}
	failed := err != nil || resp.StatusCode() >= 500
	for _, m := range rt.meters {
		var h []byte
		if err == nil && m.Header() != "" {
			h = resp.Header.Peek(m.Header())
		}
		m.End(took, failed, h)
	}
}

// originsOutcome reports whether an exchange with the upstream that
// ended with err (nil: a response) was the upstream's doing: its
// response, or a failure to connect to it or to get its answer in
// time. It was not when the client's request body failed (bodyErr:
// malformed, cut short, stalled, over listen.max_request_body; the
// client gets 400, 408 or 413), or when the gateway's own limit on
// upstream connections refused it (503).
func originsOutcome(err, bodyErr error) bool {
	return err == nil || bodyErr == nil && !errors.Is(err, fasthttp.ErrNoFreeConns)
}

// cancelMeters ends an exchange beginMeters counted without measuring it.
func cancelMeters(rt *route) {
	for _, m := range rt.meters {
		m.Cancel()
	}
}

// endMetersH2 is endMeters for the net/http path: the upstream's
// response resp, or, with resp nil, a failure to get one, measured
// unless it was the client's (clients: its request body failed, or it
// went away before the answer).
func endMetersH2(rt *route, took time.Duration, resp *http.Response, clients bool) {
	if resp == nil && clients {
		cancelMeters(rt)
		return
	}
	failed := resp == nil || resp.StatusCode >= 500
	for _, m := range rt.meters {
		var h []byte
		if name := m.Header(); resp != nil && name != "" {
			if v := resp.Header.Get(name); v != "" {
				h = []byte(v)
			}
		}
		m.End(took, failed, h)
	}
}

// adaptiveMetrics are the controllers' collectors; they implement
// adaptive.Observer. Labels: controller and signal names, from the
// configuration.
type adaptiveMetrics struct {
	factor   *prometheus.GaugeVec   // controller
	score    *prometheus.GaugeVec   // controller
	signal   *prometheus.GaugeVec   // controller, signal
	breaches *prometheus.CounterVec // controller, signal
	failures *prometheus.CounterVec // controller, signal, reason
	fleet    *prometheus.CounterVec // controller
}

func newAdaptiveMetrics(reg *prometheus.Registry) *adaptiveMetrics {
	m := &adaptiveMetrics{
		factor: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tollgate_adaptive_factor",
			Help: "The factor an adaptive controller applies to the policies naming it, as a fraction of their base (floor to 1).",
		}, []string{"controller"}),
		score: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tollgate_adaptive_score",
			Help: "The controller's last weighted breach score (0: every signal under its threshold; 1: every one at twice it).",
		}, []string{"controller"}),
		signal: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tollgate_adaptive_signal",
			Help: "A signal's last reading: latency in seconds, error_rate in percent, others as read. NaN while its source fails.",
		}, []string{"controller", "signal"}),
		breaches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_adaptive_breaches_total",
			Help: "Intervals in which a signal was above its threshold.",
		}, []string{"controller", "signal"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_adaptive_signal_failures_total",
			Help: "Readings a signal's source failed to give, by reason (timeout, down, garbage, absent).",
		}, []string{"controller", "signal", "reason"}),
		fleet: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_adaptive_fleet_errors_total",
			Help: "Failed exchanges with the fleet's shared factor (Redis).",
		}, []string{"controller"}),
	}
	reg.MustRegister(m.factor, m.score, m.signal, m.breaches, m.failures, m.fleet)
	return m
}

// reset sets a (re)started controller's series to their starting values.
func (m *adaptiveMetrics) reset(s *adaptive.Settings) {
	m.factor.WithLabelValues(s.Name).Set(1)
	m.score.WithLabelValues(s.Name).Set(0)
	for _, sg := range s.Signals {
		m.breaches.WithLabelValues(s.Name, sg.Name)
	}
}

// Stepped records a step.
func (m *adaptiveMetrics) Stepped(s *adaptive.Settings, out adaptive.Outcome, readings []adaptive.Reading, published int64) {
	m.factor.WithLabelValues(s.Name).Set(float64(published) / adaptive.Base)
	m.score.WithLabelValues(s.Name).Set(out.Score)
	for i, sg := range s.Signals {
		v := math.NaN()
		if i < len(readings) && readings[i].OK {
			v = readings[i].Value
		}
		m.signal.WithLabelValues(s.Name, sg.Name).Set(v)
		if out.Breaches[i] {
			m.breaches.WithLabelValues(s.Name, sg.Name).Inc()
		}
	}
}

// Failed counts a signal's failure.
func (m *adaptiveMetrics) Failed(s *adaptive.Settings, i int, reason string) {
	m.failures.WithLabelValues(s.Name, s.Signals[i].Name, reason).Inc()
}

// FleetFailed counts a failed exchange with the fleet.
func (m *adaptiveMetrics) FleetFailed(s *adaptive.Settings, _ error) {
	m.fleet.WithLabelValues(s.Name).Inc()
}

// initAdaptive sets up the controllers' metrics and fleet.
func (g *Gateway) initAdaptive() {
	g.adapt.m = newAdaptiveMetrics(g.m.reg)
	g.adapt.log = g.log
	g.adapt.fleets = map[string]adaptive.Fleet{}
	if rs := g.stores.Redis(); rs != nil {
		g.adapt.fleets[adaptive.FleetRedis] = rs.Fleet(nodeName())
	}
	if gs := g.stores.Gossip(); gs != nil {
		g.adapt.fleets[adaptive.FleetGossip] = adaptive.NewBoardFleet(gs)
	}
}

// nodeName names this gateway in the fleet's shared factors: host name
// and process id.
func nodeName() string {
	h, _ := os.Hostname()
	return h + ":" + strconv.Itoa(os.Getpid())
}

// endMeters ends the net/http path's exchange in rt's meters with the
// upstream's response resp, or, with resp nil, a failure: measured when
// it was the upstream's, cancelled when it was the client's (clients).
// Only the handler's goroutine calls it; the first call counts.
func (ex *exchange) endMeters(resp *http.Response, clients bool) {
	if !ex.metering {
		return
	}
	ex.metering = false
	endMetersH2(ex.rt, time.Since(ex.start), resp, clients)
}

// proxyErrorH2 is the net/http path's ReverseProxy.ErrorHandler: it ends
// the failed exchange in the meters, as the client's when its request
// body failed (h2Body), was over listen.max_request_body, or the client
// went away before the answer (a stream reset, a connection closed), as
// the upstream's otherwise (unreachable, or no answer within
// upstream.response_timeout), then answers it (upstreamErrorH2).
func (g *Gateway) proxyErrorH2(w http.ResponseWriter, r *http.Request, err error) {
	if ex := exchangeOf(r); ex != nil && ex.metering {
		var tooLarge *http.MaxBytesError
		ex.endMeters(nil, errors.As(err, &tooLarge) || ex.body.failed() != nil ||
			!ex.timedOut.Load() && r.Context().Err() != nil)
	}
	g.upstreamErrorH2(w, r, err)
}
