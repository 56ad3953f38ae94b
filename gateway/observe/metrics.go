package observe

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/tollgate-dev/tollgate/rules"
)

// Metrics are the gateway's Prometheus collectors, on a registry of its
// own. Label values are bounded by the configuration: rule, policy and
// route names, outcomes and status classes, never client keys.
type Metrics struct {
	Reg *prometheus.Registry

	decisions       *prometheus.CounterVec   // rule, policy, outcome
	DecisionTime    prometheus.Histogram     // seconds per Decide
	storeErrors     *prometheus.CounterVec   // rule
	exempt          *prometheus.CounterVec   // rule ("" for the top-level except)
	penalties       *prometheus.CounterVec   // rule
	penaltyRefusals *prometheus.CounterVec   // rule, policy
	counted         *prometheus.CounterVec   // rule
	UpstreamTime    *prometheus.HistogramVec // route
	UpstreamStatus  *prometheus.CounterVec   // route, class
	ShareRefused    *prometheus.CounterVec   // route
	DelaysCancelled prometheus.Counter       // delayed requests whose client left
	Reloads         *prometheus.CounterVec   // result
	ReloadOK        prometheus.Gauge
	H2              h2Metrics // the net/http data path's (h2metrics.go)
}

// NewMetrics creates the collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		Reg: prometheus.NewRegistry(),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_decisions_total",
			Help: "Rate-limit decisions by rule, policy and outcome (allowed, delayed, refused, shadow_allowed, shadow_refused, error, not_charged). " +
				"A refusal counts once, against the rule and policy that refused; the other rules the request matched count not_charged.",
		}, []string{"rule", "policy", "outcome"}),
		DecisionTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tollgate_decision_duration_seconds",
			Help:    "Time taken by the rule engine to decide one request, store included.",
			Buckets: []float64{1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 1e-3, 5e-3, 0.025, 0.1},
		}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_store_errors_total",
			Help: "Store failures met while deciding, by rule.",
		}, []string{"rule"}),
		exempt: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_exempt_total",
			Help: "Requests a rule matched but its except exempted (neither counted nor reported in headers), by rule; rule=\"\" counts those the top-level except exempted from every rule.",
		}, []string{"rule"}),
		penalties: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_penalties_total",
			Help: "Penalties started (a policy's penalty: once refused, a key is refused for that long), by rule.",
		}, []string{"rule"}),
		penaltyRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_penalty_refusals_total",
			Help: "Refusals of a key under a penalty started before (also counted refused in tollgate_decisions_total), by rule and policy.",
		}, []string{"rule", "policy"}),
		counted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_counted_total",
			Help: "Answers counted by rules with count, charged after the answer (one that found the limit already full, filled by requests in flight, starts the policy's penalty instead), by rule.",
		}, []string{"rule"}),
		UpstreamTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tollgate_upstream_duration_seconds",
			Help:    "Time from sending a request upstream to its response headers, by route.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"route"}),
		UpstreamStatus: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_upstream_responses_total",
			Help: "Responses by route and status class (2xx, 3xx, 4xx, 5xx; error when no response came).",
		}, []string{"route", "class"}),
		ShareRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_upstream_client_share_refused_total",
			Help: "Requests answered 503 by the gateway, by route, because their client already had upstream.max_conns_per_client requests in flight to the upstream.",
		}, []string{"route"}),
		DelaysCancelled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tollgate_delays_cancelled_total",
			Help: "Delayed requests (a policy's burst/delay) whose client went away during the delay: not sent upstream, as nginx drops them, and logged 499 in the access log as nginx logs them.",
		}),
		Reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_config_reloads_total",
			Help: "Configuration reloads by result (success, failure).",
		}, []string{"result"}),
		ReloadOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tollgate_config_last_reload_successful",
			Help: "1 if the last reload attempt succeeded (or none was tried), 0 if it failed.",
		}),
	}
	m.ReloadOK.Set(1)
	m.Reg.MustRegister(m.decisions, m.DecisionTime, m.storeErrors, m.exempt, m.penalties, m.penaltyRefusals, m.counted, m.UpstreamTime,
		m.UpstreamStatus, m.ShareRefused, m.DelaysCancelled, m.Reloads, m.ReloadOK,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	for _, r := range []string{"success", "failure"} {
		m.Reloads.WithLabelValues(r)
	}
	m.H2 = newH2Metrics(m.Reg)
	return m
}

// ruleCounters are one rule's decision counters, resolved once per
// snapshot so that counting on the request path is an array index.
type ruleCounters struct {
	ByPolicy    []outcomeCounters // by rules.Event.PolicyIndex
	storeErrors prometheus.Counter
	exempt      prometheus.Counter
	// The counting and penalty counters: nil for a rule that has none
	// (no count, no penalty), so that its series do not show.
	penalties       prometheus.Counter
	penaltyRefusals []prometheus.Counter // by rules.Event.PolicyIndex
	counted         prometheus.Counter
}

// outcomeCounters are one policy's decision counters by outcome; nil for
// an outcome its rule never has (a shadow rule is never refused).
type outcomeCounters [rules.NotCharged + 1]prometheus.Counter

// Observer counts the engine's events; it is the rules.Observer of one
// snapshot. Its counters are resolved when the snapshot is built (bind)
// and found by the event's rule and policy indexes: no label or map
// lookup per request.
type Observer struct {
	m      *Metrics
	Rules  []ruleCounters     // by position in rules.Config.Rules
	exempt prometheus.Counter // the top-level except's
}

// NewObserver returns an observer to set as a snapshot's
// rules.Config.Observer; bind it to the engine once built.
func (m *Metrics) NewObserver() *Observer { return &Observer{m: m} }

// enforcedOutcomes and shadowOutcomes are the outcomes an enforced or a
// shadow rule's events can have.
var (
	enforcedOutcomes = []rules.Outcome{rules.Allowed, rules.Delayed, rules.Refused, rules.NotCharged, rules.Errored}
	shadowOutcomes   = []rules.Outcome{rules.ShadowAllowed, rules.ShadowRefused, rules.NotCharged, rules.Errored}
)

// Bind resolves the counters of every rule of cfg and of each of its
// policies, as e (built from cfg) names them. It must happen before e
// decides anything: the snapshot is published after.
func (o *Observer) Bind(cfg *rules.Config, e *rules.Engine) {
	o.Rules = make([]ruleCounters, len(cfg.Rules))
	if len(cfg.Except) > 0 {
		o.exempt = o.m.exempt.WithLabelValues("")
	}
	for i, r := range cfg.Rules {
		rc := &o.Rules[i]
		rc.storeErrors = o.m.storeErrors.WithLabelValues(r.Name)
		if len(r.Except) > 0 {
			rc.exempt = o.m.exempt.WithLabelValues(r.Name)
		}
		outs := enforcedOutcomes
		if r.Shadow {
			outs = shadowOutcomes
		}
		names := e.PolicyNames(i)
		rc.ByPolicy = make([]outcomeCounters, len(names))
		for j, p := range names {
			for _, out := range outs {
				rc.ByPolicy[j][out] = o.m.decisions.WithLabelValues(r.Name, p, out.String())
			}
		}
		if r.Count != nil {
			rc.counted = o.m.counted.WithLabelValues(r.Name)
		}
		if hasPenalty(&r) {
			rc.penalties = o.m.penalties.WithLabelValues(r.Name)
			rc.penaltyRefusals = make([]prometheus.Counter, len(names))
			for j, p := range names {
				rc.penaltyRefusals[j] = o.m.penaltyRefusals.WithLabelValues(r.Name, p)
			}
		}
	}
}

// hasPenalty reports whether a policy of r (or of one of its tiers'
// plans) can have a penalty.
func hasPenalty(r *rules.Rule) bool {
	if r.Penalty > 0 {
		return true
	}
	for _, p := range r.Policies {
		if p.Penalty > 0 {
			return true
		}
	}
	if r.Tiers != nil {
		for _, pl := range r.Tiers.Plans {
			for _, p := range pl {
				if p.Penalty > 0 {
					return true
				}
			}
		}
	}
	return false
}

// penalty counts a refusal of the rule's policy under a penalty: one
// that started it (a penalty started), or one of a key already under it.
func (o *Observer) penalty(rule, policy int, started bool) {
	if uint(rule) >= uint(len(o.Rules)) {
		return
	}
	rc := &o.Rules[rule]
	switch {
	case started:
		if rc.penalties != nil {
			rc.penalties.Inc()
		}
	case uint(policy) < uint(len(rc.penaltyRefusals)):
		rc.penaltyRefusals[policy].Inc()
	}
}

// charged counts a charge made after the answer by the counting rule.
func (o *Observer) charged(rule int) {
	if uint(rule) < uint(len(o.Rules)) && o.Rules[rule].counted != nil {
		o.Rules[rule].counted.Inc()
	}
}

// Observe implements rules.Observer.
func (o *Observer) Observe(ev rules.Event) {
	if ev.Outcome == rules.Exempt {
		c := o.exempt
		if uint(ev.RuleIndex) < uint(len(o.Rules)) {
			c = o.Rules[ev.RuleIndex].exempt
		}
		if c != nil {
			c.Inc()
		}
		return
	}
	if ev.Penalty > 0 {
		switch {
		case ev.PenaltyStarted:
			o.penalty(ev.RuleIndex, ev.PolicyIndex, true)
		case ev.Outcome == rules.Refused:
			o.penalty(ev.RuleIndex, ev.PolicyIndex, false)
		}
	}
	if ev.Outcome == rules.Counted { // a charge after the answer
		o.charged(ev.RuleIndex)
		return
	}
	if uint(ev.RuleIndex) >= uint(len(o.Rules)) || ev.Outcome > rules.NotCharged {
		return
	}
	rc := &o.Rules[ev.RuleIndex]
	if uint(ev.PolicyIndex) < uint(len(rc.ByPolicy)) {
		if c := rc.ByPolicy[ev.PolicyIndex][ev.Outcome]; c != nil {
			c.Inc()
		}
	}
	if ev.Outcome == rules.Errored {
		rc.storeErrors.Inc()
	}
}

// StatusLabels are the upstream_responses_total classes, by statusIndex.
var StatusLabels = [7]string{"1xx", "2xx", "3xx", "4xx", "5xx", "error", "timeout"}

const (
	IdxError   = 5
	IdxTimeout = 6
)

// StatusIndex maps a status code to its class's index in statusLabels.
func StatusIndex(code int) int {
	return min(max(code/100-1, 0), 4)
}
