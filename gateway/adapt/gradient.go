package adapt

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate-dev/tollgate/adaptive"
	"github.com/tollgate-dev/tollgate/config"
)

// ConcLimit is a route's adaptive concurrency (routes[].
// adaptive_concurrency): its gradient controller, the wait for a place
// and the route's series.
type ConcLimit struct {
	Ctl      *adaptive.Gradient
	settings adaptive.GradientSettings
	MaxDelay time.Duration
	// wake nudges the requests waiting for a place: every release sends
	// one, and a change of the limit fills it (nudges are dropped when it
	// is full). A waiter that finds no place waits again; its timer
	// bounds it.
	wake chan struct{}

	Refused                  prometheus.Counter
	limit, minRTT, sampleRTT prometheus.Gauge
}

// Acquire takes a place, waiting up to maxDelay for one, and reports
// whether it did; a true is matched by one release.
func (l *ConcLimit) Acquire() bool {
	if l.Ctl.Acquire() {
		return true
	}
	if l.MaxDelay > 0 {
		t := time.NewTimer(l.MaxDelay)
		defer t.Stop()
		for {
			select {
			case <-l.wake:
				if l.Ctl.Acquire() {
					return true
				}
				continue
			case <-t.C:
				if l.Ctl.Acquire() {
					return true
				}
			}
			break
		}
	}
	l.Refused.Inc()
	return false
}

// Release gives the place back: the exchange with the upstream began
// at began.
func (l *ConcLimit) Release(began time.Time) {
	now := time.Now()
	nudges := 1 // the place given back
	if l.Ctl.Release(now, now.Sub(began)) {
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

// Cancel gives the place back without a sample (adaptive.Gradient.Cancel).
func (l *ConcLimit) Cancel() {
	l.Ctl.Cancel()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// publish sets the route's gauges to the controller's state.
func (l *ConcLimit) publish() {
	st := l.Ctl.State()
	l.limit.Set(float64(st.Limit))
	l.minRTT.Set(st.MinRTT.Seconds())
	l.sampleRTT.Set(st.SampleRTT.Seconds())
}

// ConcLimits are the gateway's adaptive concurrency controllers by
// route. A reload keeps a route's controller (and so its limit and
// minRTT) when its settings did not change.
type ConcLimits struct {
	mu      sync.Mutex
	byRoute map[string]*ConcLimit
	Seed    maphash.Seed

	Limit, MinRTT, SampleRTT *prometheus.GaugeVec   // route
	Refused                  *prometheus.CounterVec // route
}

// ForRoute returns the controller of a route named name with ac, the
// running one when its settings are unchanged.
func (c *ConcLimits) ForRoute(name string, ac *config.AdaptiveConcurrency) *ConcLimit {
	s := ac.GradientSettings()
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.byRoute[name]; l != nil && l.settings == s && l.MaxDelay == ac.MaxDelay {
		return l
	}
	l := &ConcLimit{
		Ctl:       adaptive.NewGradient(s, maphash.String(c.Seed, name)),
		settings:  s,
		MaxDelay:  ac.MaxDelay,
		wake:      make(chan struct{}, 64),
		Refused:   c.Refused.WithLabelValues(name),
		limit:     c.Limit.WithLabelValues(name),
		minRTT:    c.MinRTT.WithLabelValues(name),
		sampleRTT: c.SampleRTT.WithLabelValues(name),
	}
	l.publish()
	if c.byRoute == nil {
		c.byRoute = map[string]*ConcLimit{}
	}
	c.byRoute[name] = l
	return l
}

// NewConcLimits returns the routes' adaptive concurrency controllers,
// their metrics registered in reg.
func NewConcLimits(reg *prometheus.Registry) *ConcLimits {
	c := &ConcLimits{}
	c.Seed = maphash.MakeSeed()
	byRoute := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"route"})
	}
	c.Limit = byRoute("tollgate_adaptive_concurrency_limit",
		"A route's adaptive concurrency limit in force (min_concurrency while minRTT is measured).")
	c.MinRTT = byRoute("tollgate_adaptive_concurrency_min_rtt_seconds",
		"A route's last measured minRTT, the upstream's latency with few requests in flight.")
	c.SampleRTT = byRoute("tollgate_adaptive_concurrency_sample_rtt_seconds",
		"A route's last sample window's latency quantile (sampleRTT).")
	c.Refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tollgate_adaptive_concurrency_refused_total",
		Help: "Requests refused 503 because a route's adaptive concurrency limit was reached (after max_delay).",
	}, []string{"route"})
	reg.MustRegister(c.Limit, c.MinRTT, c.SampleRTT, c.Refused)
	return c
}
