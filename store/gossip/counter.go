package gossip

import (
	"math"
	"math/bits"
)

// counter is one node's contribution to one key: what it admitted in the
// window (or token bucket epoch) Win and in the one before, and, for a
// token bucket, the credit registers of both (see the package doc).
//
// A counter is the last two windows of a G-counter indexed by window,
// merged by maximum. Truncating a pointwise-max merge to the two latest
// windows commutes with the merge (a value in window W or W−1 of a join
// comes from a state whose latest window is W or W−1, which kept it), so
// merge is idempotent, commutative and associative, and a duplicated,
// reordered or late counter never counts twice.
type counter struct {
	Win  int64 // window (epoch) index: time / period
	Cur  int64 // cost admitted in Win
	Prev int64 // cost admitted in Win−1
	// MCur and MPrev are a token bucket's credit registers for Win and
	// Win−1, in ns after the window's start (0 for the other algorithms):
	// the TAT is T × admitted + the register (see tokenView).
	MCur, MPrev int64
}

// merge returns the join of a and b.
func merge(a, b counter) counter {
	if a.Win < b.Win {
		a, b = b, a
	}
	switch a.Win - b.Win {
	case 0:
		return counter{Win: a.Win, Cur: max(a.Cur, b.Cur), Prev: max(a.Prev, b.Prev),
			MCur: max(a.MCur, b.MCur), MPrev: max(a.MPrev, b.MPrev)}
	case 1:
		return counter{Win: a.Win, Cur: a.Cur, Prev: max(a.Prev, b.Cur), MCur: a.MCur, MPrev: max(a.MPrev, b.MCur)}
	}
	return a
}

// advance moves the node's own counter to window w (a later one), the
// current window becoming the previous one when adjacent.
func (c *counter) advance(w int64) {
	switch {
	case c.Win >= w:
	case c.Win == w-1:
		*c = counter{Win: w, Prev: c.Cur, MPrev: c.MCur}
	default:
		*c = counter{Win: w}
	}
}

// view is the sum of every node's counters for window w: admitted in w
// (cur) and in w−1 (prev), and the largest credit registers of both.
type view struct {
	cur, prev   int64
	mcur, mprev int64
	hasPrev     bool // some node counted in w−1 (its register is meaningful)
}

// at adds c to v, a view of window w. A counter one window ahead (a node
// whose clock is a little ahead) still says what it admitted in w.
func (v *view) add(c counter, w int64) {
	switch c.Win {
	case w:
		v.cur = addSat(v.cur, c.Cur)
		v.prev = addSat(v.prev, c.Prev)
		v.mcur = max(v.mcur, c.MCur)
		v.mprev = max(v.mprev, c.MPrev)
		v.hasPrev = v.hasPrev || c.Prev > 0 || c.MPrev > 0
	case w - 1:
		v.prev = addSat(v.prev, c.Cur)
		v.mprev = max(v.mprev, c.MCur)
		v.hasPrev = v.hasPrev || c.Cur > 0 || c.MCur > 0
	case w + 1:
		v.cur = addSat(v.cur, c.Prev)
		v.mcur = max(v.mcur, c.MPrev)
	}
}

// addSat returns a+b for non-negative a and b, saturated at MaxInt64.
func addSat(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxInt64
}

// mulSat returns a*b for non-negative a and b, saturated at MaxInt64.
func mulSat(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}
