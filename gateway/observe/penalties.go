package observe

import (
	"slices"
	"sync"
	"time"
)

// MaxPenaltiesShown bounds the penalties in force the dashboard keeps:
// when more are running, those that end soonest are dropped first.
const MaxPenaltiesShown = 100

// Penalties are the penalties in force (rules.Policy.Penalty) the
// dashboard shows, from the engine's events (rules.Event.Penalty): per
// rule, policy and key, when the penalty ends. Their memory is bounded
// (MaxPenaltiesShown entries, each a key the engine bounded); an ended
// penalty is dropped when the table is read or full. The keys are kept
// raw, as the heavy hitters keep theirs, and shown only as configured
// (ShowKey) when read. Safe for concurrent use.
type Penalties struct {
	mu  sync.Mutex
	max int
	m   map[PenaltyID]time.Time // when each ends
	// floor is, while the table is full, at most the soonest end in it
	// (stale only towards the past: an entry moved later raises the
	// true one), so that a refusal of a key that would not be shown
	// (under a brute force by more keys than the table holds, every
	// refusal of every one of them) returns without scanning.
	floor time.Time
}

// PenaltyID names one penalty: the rule, the policy that refused, the
// key's value (raw: never shown as is).
type PenaltyID struct{ Rule, Policy, Key string }

// PenaltyInForce is one running penalty as read.
type PenaltyInForce struct {
	PenaltyID
	// Left is the time the penalty has left when read.
	Left time.Duration
}

// NewPenalties returns an empty table of at most n entries (at least
// one).
func NewPenalties(n int) *Penalties {
	return &Penalties{max: max(n, 1), m: make(map[PenaltyID]time.Time)}
}

// Note records that id is under a penalty with left to run at now. A
// penalty already known keeps the later end of the two (the store's time
// left is exact; a later end only moves with a new penalty). When the
// table is full, ended penalties are dropped, then the one that ends
// soonest, unless id would end sooner still.
func (p *Penalties) Note(id PenaltyID, left time.Duration, now time.Time) {
	if left <= 0 {
		return
	}
	end := now.Add(left)
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.m[id]; ok {
		if end.Sub(old) > time.Second/2 { // a new penalty: a small step is the clock's
			p.m[id] = end
		}
		return
	}
	if len(p.m) >= p.max {
		if !end.After(p.floor) && p.floor.After(now) {
			return // ends before every one shown, none of which has ended
		}
		p.dropEnded(now)
	}
	if len(p.m) >= p.max {
		soonest, at := p.soonest()
		if !end.After(at) {
			p.floor = at
			return
		}
		delete(p.m, soonest)
	}
	p.m[id] = end
	if len(p.m) >= p.max {
		_, p.floor = p.soonest()
	}
}

// soonest is the entry that ends first. p.mu is held; p.m is not empty.
func (p *Penalties) soonest() (id PenaltyID, at time.Time) {
	for k, e := range p.m {
		if at.IsZero() || e.Before(at) {
			id, at = k, e
		}
	}
	return id, at
}

// dropEnded deletes the penalties ended by now. p.mu is held.
func (p *Penalties) dropEnded(now time.Time) {
	for k, e := range p.m {
		if !e.After(now) {
			delete(p.m, k)
		}
	}
}

// InForce appends the penalties running at now to dst, the longest left
// first (then by rule, policy and key), and drops those that ended.
func (p *Penalties) InForce(dst []PenaltyInForce, now time.Time) []PenaltyInForce {
	p.mu.Lock()
	p.dropEnded(now)
	start := len(dst)
	for k, e := range p.m {
		dst = append(dst, PenaltyInForce{PenaltyID: k, Left: e.Sub(now)})
	}
	p.mu.Unlock()
	slices.SortFunc(dst[start:], func(a, b PenaltyInForce) int {
		switch {
		case a.Left != b.Left:
			if a.Left > b.Left {
				return -1
			}
			return 1
		case a.Rule != b.Rule:
			if a.Rule < b.Rule {
				return -1
			}
			return 1
		case a.Policy != b.Policy:
			if a.Policy < b.Policy {
				return -1
			}
			return 1
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	return dst
}

// Len is how many penalties the table holds (some may have ended).
func (p *Penalties) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}
