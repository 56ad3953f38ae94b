package adapt

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate-dev/tollgate/adaptive"
	"github.com/tollgate-dev/tollgate/config"
)

// concLimit is a route's adaptive concurrency (routes[].
// adaptive_concurrency): its gradient controller, the wait for a place
// and the route's series.
type concLimit struct {
	ctl      *adaptive.Gradient
	settings adaptive.GradientSettings
	maxDelay time.Duration
	// wake nudges the requests waiting for a place: every release sends
	// one, and a change of the limit fills it (nudges are dropped when it
	// is full). A waiter that finds no place waits again; its timer
	// bounds it.
	wake chan struct{}

	refused                  prometheus.Counter
	limit, minRTT, sampleRTT prometheus.Gauge
}

// acquire takes a place, waiting up to maxDelay for one, and reports
// whether it did; a true is matched by one release.
func (l *concLimit) acquire() bool {
	if l.ctl.Acquire() {
		return true
	}
	if l.maxDelay > 0 {
		t := time.NewTimer(l.maxDelay)
		defer t.Stop()
		for {
			select {
			case <-l.wake:
				if l.ctl.Acquire() {
					return true
				}
				continue
			case <-t.C:
				if l.ctl.Acquire() {
					return true
				}
			}
			break
		}
	}
	l.refused.Inc()
	return false
}

// release gives the place back: the exchange with the upstream began
// at began.
func (l *concLimit) release(began time.Time) {
	now := time.Now()
	nudges := 1 // the place given back
	if l.ctl.Release(now, now.Sub(began)) {
		l.publish()
		// The limit changed: if it rose by several places, as many
		// waiters may go. A nudge too many costs a waiter one failed
		// Acquire; one too few would leave it waiting out max_delay.
		nudges = cap(l.wake)
	}
	for range nudges {
		select {
		case l.wake <- struct{}{}:
		default:
			return
		}
	}
}

// cancel gives the place back without a sample (adaptive.Gradient.Cancel).
func (l *concLimit) cancel() {
	l.ctl.Cancel()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// publish sets the route's gauges to the controller's state.
func (l *concLimit) publish() {
	st := l.ctl.State()
	l.limit.Set(float64(st.Limit))
	l.minRTT.Set(st.MinRTT.Seconds())
	l.sampleRTT.Set(st.SampleRTT.Seconds())
}

// concLimits are the gateway's adaptive concurrency controllers by
// route. A reload keeps a route's controller (and so its limit and
// minRTT) when its settings did not change.
type concLimits struct {
	mu      sync.Mutex
	byRoute map[string]*concLimit
	seed    maphash.Seed

	limit, minRTT, sampleRTT *prometheus.GaugeVec   // route
	refused                  *prometheus.CounterVec // route
}

// initConcLimits registers the adaptive concurrency metrics.
func (g *Gateway) initConcLimits() {
	c := &g.concs
	c.seed = maphash.MakeSeed()
	c.limit = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tollgate_adaptive_concurrency_limit",
		Help: "A route's adaptive concurrency limit in force (min_concurrency while minRTT is measured).",
	}, []string{"route"})
	c.minRTT = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tollgate_adaptive_concurrency_min_rtt_seconds",
		Help: "A route's last measured minRTT, the upstream's latency with few requests in flight.",
	}, []string{"route"})
	c.sampleRTT = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tollgate_adaptive_concurrency_sample_rtt_seconds",
		Help: "A route's last sample window's latency quantile (sampleRTT).",
	}, []string{"route"})
	c.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tollgate_adaptive_concurrency_refused_total",
		Help: "Requests refused 503 because a route's adaptive concurrency limit was reached (after max_delay).",
	}, []string{"route"})
	g.m.reg.MustRegister(c.limit, c.minRTT, c.sampleRTT, c.refused)
}

// forRoute returns the controller of a route named name with ac, the
// running one when its settings are unchanged.
func (c *concLimits) forRoute(name string, ac *config.AdaptiveConcurrency) *concLimit {
	s := ac.GradientSettings()
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.byRoute[name]; l != nil && l.settings == s && l.maxDelay == ac.MaxDelay {
		return l
	}
	l := &concLimit{
		ctl:       adaptive.NewGradient(s, maphash.String(c.seed, name)),
		settings:  s,
		maxDelay:  ac.MaxDelay,
		wake:      make(chan struct{}, 64),
		refused:   c.refused.WithLabelValues(name),
		limit:     c.limit.WithLabelValues(name),
		minRTT:    c.minRTT.WithLabelValues(name),
		sampleRTT: c.sampleRTT.WithLabelValues(name),
	}
	l.publish()
	if c.byRoute == nil {
		c.byRoute = map[string]*concLimit{}
	}
	c.byRoute[name] = l
	return l
}
