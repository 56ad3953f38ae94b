package limit

import (
	"math"
	"math/bits"
	"time"
)

// addSat returns a+b, saturated to the int64 range.
func addSat(a, b int64) int64 {
	s := a + b
	if (s > a) != (b > 0) {
		if b > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return s
}

// mulSat returns a*b for non-negative a and b, saturated at MaxInt64.
func mulSat(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

// mulLess reports a*b < c*d for non-negative operands, exactly.
func mulLess(a, b, c, d int64) bool {
	h1, l1 := bits.Mul64(uint64(a), uint64(b))
	h2, l2 := bits.Mul64(uint64(c), uint64(d))
	return h1 < h2 || (h1 == h2 && l1 < l2)
}

// mulDivCeil returns ceil(a*b/c) for non-negative a, b and positive c,
// saturated at MaxInt64.
func mulDivCeil(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, r := bits.Div64(hi, lo, uint64(c))
	if r != 0 {
		q++
	}
	if q > math.MaxInt64 || q == 0 && r != 0 {
		return math.MaxInt64
	}
	return int64(q)
}

// mulDivFloor returns floor(a*b/c) for non-negative a, b and positive c,
// saturated at MaxInt64.
func mulDivFloor(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(c))
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// until returns the duration from now to t, never negative.
func until(t, now int64) time.Duration {
	if t <= now {
		return 0
	}
	return time.Duration(t - now)
}
