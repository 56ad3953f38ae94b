package adaptiveconf

import "sync/atomic"

// Factor is a controller's published factor, in permille of the base:
// one atomic integer that the rule engine reads at every decision
// (rules.Scale). The zero Factor reads Base. Safe for concurrent use.
type Factor struct {
	v atomic.Int64
}

// Permille returns the factor, 1-1000.
func (f *Factor) Permille() int64 {
	if v := f.v.Load(); v > 0 {
		return v
	}
	return Base
}

// Store publishes p, clamped to 1-1000.
func (f *Factor) Store(p int64) { f.v.Store(min(max(p, 1), Base)) }
