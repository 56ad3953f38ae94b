package fleetsim

import (
	"container/heap"
	"math/rand/v2"
)

// Fleet is a simulated fleet of nodes under every tier of its Config,
// fed one request at a time in time order (Request) on a virtual clock:
// the log's time. It is not safe for concurrent use.
type Fleet struct {
	cfg    Config
	now    int64 // the virtual clock, Unix ns
	start  int64
	begun  bool
	router *router
	keys   keyTable
	phase  []int64 // each node's offset in the interval
	ticks  tickHeap
	exact  *exact
	runs   []*tierRun

	requests   int64
	exAdmitted int64
	exRefused  int64
	exErrors   int64
	keyReqs    []int64 // requests per key id
}

// tierRun is one tier's simulation and its tally against the exact
// answer.
type tierRun struct {
	tier        Tier
	sim         tierSim // nil when the tier cannot enforce the policy
	unsupported string
	scheduled   []bool // node has a tick queued

	admitted, refused, errors int64
	overshoot, falseRefusals  int64
	perKey                    []keyTally // by key id
	secOver, secFalse         []int64    // per second of log time
}

type keyTally struct{ overshoot, falseRefusals int64 }

// New builds the fleet: every node of every tier, on the virtual clock.
// A tier that cannot enforce the policy (the gossip and eventual tiers
// refuse the sliding log) is reported as unsupported, with the reason.
func New(cfg Config) (*Fleet, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	f := &Fleet{cfg: cfg, keys: keyTable{ids: make(map[string]int32)}}
	f.router = newRouter(&f.cfg)
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x7068617365))
	for range cfg.Nodes {
		f.phase = append(f.phase, rng.Int64N(int64(cfg.Interval)))
	}
	var err error
	if f.exact, err = newExact(f); err != nil {
		return nil, err
	}
	for _, t := range cfg.Tiers {
		r := &tierRun{tier: t, scheduled: make([]bool, cfg.Nodes)}
		var sim tierSim
		switch t {
		case Local:
			sim, err = newLocal(f)
		case Eventual:
			sim, err = newEventual(f)
		case Gossip:
			sim, err = newGossip(f)
		case Strict:
			sim, err = newStrict(f)
		}
		if err != nil {
			r.unsupported = err.Error()
		} else {
			r.sim = sim
		}
		f.runs = append(f.runs, r)
	}
	return f, nil
}

// clock is every simulated store's clock.
func (f *Fleet) clock() int64 { return f.now }

// Request runs one request, at t (Unix ns) on key with cost, through
// the exact counter and every tier's fleet. Requests must come in time
// order; one earlier than the last is run at the last one's time.
func (f *Fleet) Request(t int64, key string, cost int64) {
	if !f.begun {
		f.begun, f.start, f.now = true, t, t
		// Phases are offsets from the first request's interval.
		iv := int64(f.cfg.Interval)
		base := t - t%iv
		for i := range f.phase {
			f.phase[i] += base
		}
	}
	t = max(t, f.now)
	f.advance(t)
	f.now = t
	k := f.keys.intern(key)
	if int(k) == len(f.keyReqs) {
		f.keyReqs = append(f.keyReqs, 0)
	}
	f.keyReqs[k]++
	f.requests++
	node := f.router.route(key)
	exOK, err := f.exact.decide(key, cost)
	switch {
	case err != nil:
		f.exErrors++
	case exOK:
		f.exAdmitted++
	default:
		f.exRefused++
	}
	sec := int((t - f.start) / 1e9)
	for ti, r := range f.runs {
		if r.sim == nil {
			continue
		}
		ok, tick, err := r.sim.decide(node, k, key, cost)
		if tick && !r.scheduled[node] {
			r.scheduled[node] = true
			heap.Push(&f.ticks, tickEvent{at: nextTick(t, f.phase[node], int64(f.cfg.Interval)), tier: int32(ti), node: int32(node)})
		}
		switch {
		case err != nil:
			r.errors++
			continue
		case ok:
			r.admitted++
		default:
			r.refused++
		}
		if ok == exOK {
			continue
		}
		for int(k) >= len(r.perKey) {
			r.perKey = append(r.perKey, keyTally{})
		}
		for sec >= len(r.secOver) {
			r.secOver = append(r.secOver, 0)
			r.secFalse = append(r.secFalse, 0)
		}
		if ok {
			r.overshoot++
			r.perKey[k].overshoot++
			r.secOver[sec]++
		} else {
			r.falseRefusals++
			r.perKey[k].falseRefusals++
			r.secFalse[sec]++
		}
	}
}

// advance runs every node's periodic work due by t, in time order.
func (f *Fleet) advance(t int64) {
	iv := int64(f.cfg.Interval)
	for len(f.ticks) > 0 && f.ticks[0].at <= t {
		ev := f.ticks[0]
		f.now = ev.at
		r := f.runs[ev.tier]
		if r.sim.tick(int(ev.node)) {
			f.ticks[0].at += iv
			heap.Fix(&f.ticks, 0)
		} else {
			r.scheduled[ev.node] = false
			heap.Pop(&f.ticks)
		}
	}
}

// Close releases the simulated stores.
func (f *Fleet) Close() {
	for _, r := range f.runs {
		if r.sim != nil {
			r.sim.close()
		}
	}
	f.exact.m.Close()
}
