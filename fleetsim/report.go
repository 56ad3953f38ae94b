package fleetsim

import (
	"cmp"
	"slices"
	"time"
)

// Report is a fleet simulation's outcome: per tier, what the fleet
// decided against the exact single-counter answer on the same requests.
type Report struct {
	// Policy is the limit every node enforced, in configuration syntax.
	Policy string `json:"policy"`
	// Nodes, Routing, Interval, Latency and Loss describe the fleet and
	// its network.
	Nodes    int           `json:"nodes"`
	Routing  Routing       `json:"routing"`
	Weights  []float64     `json:"weights,omitempty"`
	Interval time.Duration `json:"interval_ns"`
	Latency  time.Duration `json:"latency_ns"`
	Loss     float64       `json:"loss"`
	// Seconds is the log time simulated, first request to last (at
	// least one interval).
	Seconds float64 `json:"seconds"`
	// Requests and Keys are what was replayed.
	Requests int64 `json:"requests"`
	Keys     int   `json:"keys"`
	// Exact is the single counter's answer: what one store seeing every
	// request would have admitted and refused.
	Exact Outcome `json:"exact"`
	// Tiers are the tiers' outcomes, in the order simulated.
	Tiers []TierReport `json:"tiers"`
	// PointSeconds is the log time each point of a tier's Cumulative
	// series covers.
	PointSeconds int `json:"point_seconds"`
}

// Outcome counts decisions.
type Outcome struct {
	Admitted int64 `json:"admitted"`
	Refused  int64 `json:"refused"`
	// Errors are requests the store failed to decide (a full key table).
	Errors int64 `json:"errors,omitempty"`
}

// TierReport is one tier's outcome.
type TierReport struct {
	Tier Tier `json:"tier"`
	// Unsupported, when set, says why the tier cannot enforce the
	// policy (it was not simulated).
	Unsupported string `json:"unsupported,omitempty"`
	Outcome
	// Overshoot counts requests the fleet admitted that the exact
	// counter refused: admitted beyond the limit.
	Overshoot int64 `json:"overshoot"`
	// OvershootPercent is Overshoot in percent of what the exact counter
	// admitted.
	OvershootPercent float64 `json:"overshoot_percent"`
	// FalseRefusals counts requests the fleet refused that the exact
	// counter admitted.
	FalseRefusals       int64   `json:"false_refusals"`
	FalseRefusalPercent float64 `json:"false_refusal_percent"`
	// WorstKeys are the keys the fleet got most wrong (overshoot plus
	// false refusals), worst first.
	WorstKeys []KeyDiff `json:"worst_keys"`
	// MessagesPerNodeSecond and BytesPerNodeSecond are what coordination
	// sent, per node and second of log time: gossip messages (their
	// encoded size, without UDP/IP headers), or Redis script calls and
	// replies (their size estimated: BytesEstimated).
	MessagesPerNodeSecond float64 `json:"messages_per_node_second"`
	BytesPerNodeSecond    float64 `json:"bytes_per_node_second"`
	BytesEstimated        bool    `json:"bytes_estimated,omitempty"`
	// Cumulative is the overshoot and CumulativeFalse the false refusals
	// so far, one point per PointSeconds of log time.
	Cumulative      []int64 `json:"cumulative_overshoot"`
	CumulativeFalse []int64 `json:"cumulative_false_refusals"`
}

// KeyDiff is one key's disagreement with the exact counter.
type KeyDiff struct {
	Key           string `json:"key"`
	Requests      int64  `json:"requests"`
	Overshoot     int64  `json:"overshoot"`
	FalseRefusals int64  `json:"false_refusals"`
}

// maxPoints bounds a tier's series.
const maxPoints = 240

// Report returns the outcome so far.
func (f *Fleet) Report() *Report {
	rep := &Report{Policy: f.cfg.Policy.String(), Nodes: f.cfg.Nodes, Routing: f.cfg.Routing,
		Interval: f.cfg.Interval, Latency: f.cfg.Latency, Loss: f.cfg.Loss,
		Requests: f.requests, Keys: len(f.keys.names),
		Exact: Outcome{Admitted: f.exAdmitted, Refused: f.exRefused, Errors: f.exErrors}}
	if f.cfg.Routing == Regional {
		rep.Weights = f.cfg.Weights
	}
	span := time.Duration(f.now - f.start)
	rep.Seconds = max(span, f.cfg.Interval).Seconds()
	secs := int(span/time.Second) + 1
	rep.PointSeconds = (secs + maxPoints - 1) / maxPoints
	for _, r := range f.runs {
		tr := TierReport{Tier: r.tier, Unsupported: r.unsupported}
		if r.sim != nil {
			tr.Outcome = Outcome{Admitted: r.admitted, Refused: r.refused, Errors: r.errors}
			tr.Overshoot, tr.FalseRefusals = r.overshoot, r.falseRefusals
			tr.OvershootPercent = percent(r.overshoot, f.exAdmitted)
			tr.FalseRefusalPercent = percent(r.falseRefusals, f.exAdmitted)
			tr.WorstKeys = f.worst(r)
			msgs, bytes, est := r.sim.traffic()
			perNodeSec := float64(f.cfg.Nodes) * rep.Seconds
			tr.MessagesPerNodeSecond = float64(msgs) / perNodeSec
			tr.BytesPerNodeSecond = float64(bytes) / perNodeSec
			tr.BytesEstimated = est
			tr.Cumulative = cumulative(r.secOver, secs, rep.PointSeconds)
			tr.CumulativeFalse = cumulative(r.secFalse, secs, rep.PointSeconds)
		}
		rep.Tiers = append(rep.Tiers, tr)
	}
	return rep
}

func percent(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// worst returns the Top keys r got most wrong.
func (f *Fleet) worst(r *tierRun) []KeyDiff {
	var ks []KeyDiff
	for id, t := range r.perKey {
		if t.overshoot+t.falseRefusals > 0 {
			ks = append(ks, KeyDiff{Key: f.keys.names[id], Requests: f.keyReqs[id], Overshoot: t.overshoot, FalseRefusals: t.falseRefusals})
		}
	}
	slices.SortFunc(ks, func(a, b KeyDiff) int {
		if c := cmp.Compare(b.Overshoot+b.FalseRefusals, a.Overshoot+a.FalseRefusals); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	return ks[:min(len(ks), f.cfg.Top)]
}

// cumulative sums per-second counts into points of step seconds each.
func cumulative(perSec []int64, secs, step int) []int64 {
	pts := make([]int64, (secs+step-1)/step)
	sum := int64(0)
	for i := range pts {
		for s := i * step; s < min((i+1)*step, secs); s++ {
			if s < len(perSec) {
				sum += perSec[s]
			}
		}
		pts[i] = sum
	}
	return pts
}
