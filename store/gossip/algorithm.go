package gossip

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/limit"
)

// shape is what two nodes must agree on to add up their counters for a
// key: the algorithm, its window (or token bucket epoch) length in ns and
// its limit (or burst). A token bucket's emission interval is
// period/limit, exactly.
type shape struct {
	alg    limit.Algorithm
	period int64
	limit  int64
}

// gossipable reports whether a's state can be shared as counters.
func gossipable(a limit.Algorithm) bool {
	return a == limit.AlgFixedWindow || a == limit.AlgSlidingWindow || a == limit.AlgTokenBucket
}

// shapeOf returns p's shape, or an error for an invalid policy or one
// that cannot be gossiped.
func shapeOf(p limit.Policy) (limit.Stateful, shape, error) {
	if err := limit.Check(p); err != nil {
		return nil, shape{}, err
	}
	sp, ok := p.(limit.Stateful)
	if !ok || !gossipable(p.Algorithm()) {
		return nil, shape{}, fmt.Errorf("%w: %v", ErrUnsupported, p.Algorithm())
	}
	switch p := p.(type) {
	case limit.FixedWindow:
		return sp, shape{alg: limit.AlgFixedWindow, period: int64(p.Window), limit: p.Limit}, nil
	case limit.SlidingWindow:
		return sp, shape{alg: limit.AlgSlidingWindow, period: int64(p.Window), limit: p.Limit}, nil
	case limit.TokenBucket:
		q := p.Quota() // Burst units per Rate.Interval() × Burst
		return sp, shape{alg: limit.AlgTokenBucket, period: int64(q.Window), limit: q.Limit}, nil
	}
	// Another implementation of a gossipable algorithm: its parameters
	// are not known here.
	return nil, shape{}, fmt.Errorf("%w: %T", ErrUnsupported, p)
}

// CheckPolicy reports whether p can be enforced by a Store: nil for a
// valid fixed window, sliding window or token bucket; an error wrapping
// ErrUnsupported for the other algorithms, so that a configuration can be
// refused before any node starts.
func CheckPolicy(p limit.Policy) error {
	_, _, err := shapeOf(p)
	return err
}

// state returns the limit.State that the view v of window w (at now)
// amounts to under sh, for the policy's own Decide, and for a token
// bucket the credit register M* of the window (see tokenTAT).
func (sh shape) state(v view, w, now int64) (limit.State, int64) {
	switch sh.alg {
	case limit.AlgFixedWindow:
		if v.cur == 0 {
			return limit.State{}, 0
		}
		return limit.State{A: w, B: v.cur, Idle: addSat(mulSat(w, sh.period), sh.period)}, 0
	case limit.AlgSlidingWindow:
		if v.cur == 0 && v.prev == 0 {
			return limit.State{}, 0
		}
		return limit.State{A: v.cur, B: v.prev, Idle: addSat(mulSat(w, sh.period), 2*sh.period)}, 0
	default:
		tat, m := sh.tokenTAT(v, w)
		if tat <= now {
			return limit.State{}, m
		}
		return limit.State{A: tat, Idle: tat}, m
	}
}

// tokenTAT returns the token bucket's theoretical arrival time that the
// view v of epoch w implies, and the epoch's credit register M*:
//
//	TAT(w−1) = start(w−1) + mprev + T × prev
//	M*       = max(start(w) + mcur, TAT(w−1), start(w))
//	TAT      = M* + T × cur
func (sh shape) tokenTAT(v view, w int64) (tat, m int64) {
	t := sh.period / sh.limit
	s := mulSat(w, sh.period)
	m = max(s, addSat(s, v.mcur))
	if v.hasPrev {
		m = max(m, addSat(addSat(s-sh.period, v.mprev), mulSat(t, v.prev)))
	}
	return addSat(m, mulSat(t, v.cur)), m
}

// charge records an admission of cost at now into c, the node's own
// counter, whose view of window w was v with credit register m.
func (sh shape) charge(c *counter, v view, m, w, now, cost int64) {
	c.advance(w)
	c.Cur = addSat(c.Cur, cost)
	if sh.alg == limit.AlgTokenBucket {
		// GCRA: TAT' = max(TAT, now) + T·cost = T·(cur+cost) + max(M*, now − T·cur).
		// The register is relative to the start of the counter's window
		// (a later one than w if the clock went back; then nm−s is below
		// what it holds and changes nothing).
		s := mulSat(c.Win, sh.period)
		nm := max(m, now-mulSat(sh.period/sh.limit, v.cur))
		c.MCur = max(c.MCur, nm-s)
	}
}
