package envoyrls

import (
	"math"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are envoyproxy/ratelimit's per-descriptor counters as
// Prometheus counters labelled by domain and descriptor:
// tollgate_rls_total_hits_total, _over_limit_total, _near_limit_total,
// _within_limit_total and _shadow_mode_total, counted in hits (a request
// of hits_addend 5 adds 5), split between near and over limit as
// envoyproxy/ratelimit splits them. Config loads and global shadow-mode
// answers are counted too.
//
// The descriptor label is the descriptor's configured path
// ("key1_value1.subkey1", a wildcard as configured), so the series are
// bounded by the configuration. With detailed_metric or value_to_metric
// it is the request's own path, for at most MaxDetailed distinct paths;
// later ones count under the configured path.
type Metrics struct {
	hits, over, near, within, shadow *prometheus.CounterVec
	global                           prometheus.Counter
	loads                            *prometheus.CounterVec
	fallbacks                        *prometheus.CounterVec // charge.go
	maxDetailed                      int

	mu       sync.Mutex
	detailed map[string]struct{}
}

// MaxDetailed is the default bound on detailed descriptor labels.
const MaxDetailed = 1000

// NewMetrics registers the counters with reg. maxDetailed bounds the
// detailed descriptor labels; zero means MaxDetailed.
func NewMetrics(reg prometheus.Registerer, maxDetailed int) (*Metrics, error) {
	if maxDetailed <= 0 {
		maxDetailed = MaxDetailed
	}
	labels := []string{"domain", "descriptor"}
	vec := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tollgate", Subsystem: "rls", Name: name, Help: help}, labels)
	}
	m := &Metrics{
		hits:   vec("total_hits_total", "Hits on a configured descriptor (hits_addend each)."),
		over:   vec("over_limit_total", "Hits over the descriptor's limit."),
		near:   vec("near_limit_total", "Hits within the limit but past its near-limit ratio."),
		within: vec("within_limit_total", "Hits within the limit."),
		shadow: vec("shadow_mode_total", "Hits over a shadow-mode limit, answered OK."),
		global: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tollgate", Subsystem: "rls", Name: "global_shadow_mode_total",
			Help: "Requests over the limit answered OK by the global shadow mode."}),
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tollgate", Subsystem: "rls", Name: "config_loads_total",
			Help: "Configuration loads, by result (success, error)."}, []string{"result"}),
		fallbacks:   fallbackMetric(),
		maxDetailed: maxDetailed,
		detailed:    make(map[string]struct{}),
	}
	for _, c := range []prometheus.Collector{m.hits, m.over, m.near, m.within, m.shadow, m.global, m.loads, m.fallbacks} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// label is the descriptor label: detailed when given and within bound.
func (m *Metrics) label(l *Limit, detailed string) string {
	if detailed == "" {
		return l.Path
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.detailed[detailed]; ok {
		return detailed
	}
	if len(m.detailed) >= m.maxDetailed {
		return l.Path
	}
	m.detailed[detailed] = struct{}{}
	return detailed
}

// count records a decided descriptor: hits charged (or refused), and the
// remaining the store reported (after the hits when allowed, before them
// when refused).
func (m *Metrics) count(l *Limit, detailed string, hits int64, allowed bool, remaining int64, ratio float64) {
	if m == nil {
		return
	}
	lbl := m.label(l, detailed)
	add := func(v *prometheus.CounterVec, n int64) {
		if n > 0 {
			v.WithLabelValues(l.Domain, lbl).Add(float64(n))
		}
	}
	limitN := int64(l.RequestsPerUnit)
	if l.Policy != nil {
		limitN = l.Policy.Quota().Limit
	}
	near := int64(math.Floor(float64(limitN) * ratio))
	var before, after int64
	if allowed {
		after = limitN - remaining
		before = after - hits
	} else {
		before = limitN - remaining
		after = before + hits
	}
	add(m.hits, hits)
	if allowed {
		add(m.within, hits)
		if after > near {
			add(m.near, after-max(near, before))
		}
		return
	}
	if before >= limitN {
		add(m.over, hits)
	} else {
		add(m.over, after-limitN)
		add(m.near, limitN-max(near, before))
	}
	if l.ShadowMode {
		if before >= limitN {
			add(m.shadow, hits)
		} else {
			add(m.shadow, after-limitN)
		}
	}
}

func (m *Metrics) globalShadow() {
	if m != nil {
		m.global.Inc()
	}
}

// Loaded counts a configuration load, failed when err is not nil.
func (m *Metrics) Loaded(err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.loads.WithLabelValues("error").Inc()
		return
	}
	m.loads.WithLabelValues("success").Inc()
}
