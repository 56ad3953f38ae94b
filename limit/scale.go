package limit

import (
	"fmt"
	"math"
	"time"
)

// Scale returns p with its quota multiplied by permille/1000, for an
// adaptive controller's factor: a window's limit and a bucket's burst
// scaled (rounded down, at least one; a leaky bucket's burst and delay
// may reach zero), and a bucket's rate scaled exactly by lengthening its
// period (Period·1000/permille, rounded up). permille is 1-1000; 1000
// returns p itself.
//
// Integer arithmetic only, as every algorithm: the scaled policy is
// another valid policy, applied to the same keys (a key's state under one
// factor reads as a state under the next: a window's count, a bucket's
// TAT), so that the factor may change between two requests of a key.
func Scale(p Policy, permille int64) (Policy, error) {
	if permille < 1 || permille > 1000 {
		return nil, fmt.Errorf("%w: limit: scale %d‰ must be from 1 to 1000", ErrInvalidPolicy, permille)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if permille == 1000 {
		return p, nil
	}
	var out Policy
	switch p := p.(type) {
	case FixedWindow:
		p.Limit = scaleCount(p.Limit, permille, 1)
		out = p
	case SlidingWindow:
		p.Limit = scaleCount(p.Limit, permille, 1)
		out = p
	case SlidingLog:
		p.Limit = scaleCount(p.Limit, permille, 1)
		out = p
	case TokenBucket:
		r, err := slowerBy(p.Rate, permille)
		if err != nil {
			return nil, err
		}
		p.Rate, p.Burst = r, scaleCount(p.burst(), permille, 1)
		out = p
	case LeakyBucket:
		r, err := slowerBy(p.Rate, permille)
		if err != nil {
			return nil, err
		}
		p.Rate, p.Burst, p.Delay = r, scaleCount(p.Burst, permille, 0), scaleCount(p.Delay, permille, 0)
		out = p
	default:
		return nil, fmt.Errorf("%w: limit: cannot scale %T", ErrInvalidPolicy, p)
	}
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("limit: scaled to %d‰: %w", permille, err)
	}
	return out, nil
}

// scaleCount is n·permille/1000 rounded down, at least least, without
// overflow.
func scaleCount(n, permille, least int64) int64 {
	var s int64
	if n > math.MaxInt64/1000 {
		s = n / 1000 * permille
	} else {
		s = n * permille / 1000
	}
	return max(s, least)
}

// slowerBy returns r·permille/1000: the same count over a period
// lengthened by 1000/permille, rounded up.
func slowerBy(r Rate, permille int64) (Rate, error) {
	if int64(r.Period) > (math.MaxInt64-permille)/1000 {
		return r, fmt.Errorf("%w: limit: %v scaled to %d‰ overflows the period", ErrInvalidPolicy, r, permille)
	}
	r.Period = time.Duration((int64(r.Period)*1000 + permille - 1) / permille)
	return r, nil
}
