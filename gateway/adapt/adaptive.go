package adapt

import (
	"log/slog"
	"math"
	"reflect"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate-dev/tollgate/adaptive"
	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/rules"
)

// Controllers are the gateway's running adaptive controllers. A reload
// keeps a controller whose settings did not change (and so its factor),
// replaces one that changed and stops one that went.
type Controllers struct {
	mu      sync.Mutex
	running map[string]*adaptive.Loop
	m       *adaptiveMetrics
	log     *slog.Logger
	fleets  map[string]adaptive.Fleet // by tier (adaptive.FleetRedis, FleetGossip), when the store has it
}

// NewControllers returns no controllers yet (Prepare and Commit start
// them), their metrics registered in reg, with the fleets the store
// offers by tier.
func NewControllers(reg *prometheus.Registry, log *slog.Logger, fleets map[string]adaptive.Fleet) *Controllers {
	return &Controllers{m: newAdaptiveMetrics(reg), log: log, fleets: fleets}
}

// Prepare returns the loops cfg needs: the running ones whose settings
// are unchanged, new (unstarted) ones for the others.
func (cs *Controllers) Prepare(cfg *config.Config) (map[string]*adaptive.Loop, error) {
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

// Commit makes loops the running set: it starts the new ones and stops
// those no longer in it. Called once the snapshot that uses loops is
// in place.
func (cs *Controllers) Commit(loops map[string]*adaptive.Loop) {
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

// CloseAll stops every loop.
func (cs *Controllers) CloseAll() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, l := range cs.running {
		l.Close()
	}
	cs.running = nil
}

// Scales is the rule engine's view of loops.
func Scales(loops map[string]*adaptive.Loop) rules.ScaleFunc {
	return func(name string) rules.Scale {
		if l := loops[name]; l != nil {
			return l.Factor()
		}
		return nil
	}
}

// MetersFor returns the meters of the loops whose upstream is upstream.
func MetersFor(loops map[string]*adaptive.Loop, upstream string) []*adaptive.Meter {
	var out []*adaptive.Meter
	for _, l := range loops {
		if m := l.Meter(); m != nil && l.Settings().Upstream == upstream {
			out = append(out, m)
		}
	}
	return out
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
