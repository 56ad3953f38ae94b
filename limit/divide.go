package limit

import (
	"fmt"
	"math"
	"time"
)

// Divide returns p's share for one of nodes nodes: a window's limit and a
// bucket's burst divided (rounded down, at least one; a leaky bucket's
// burst and delay may reach zero, which is valid), and a bucket's rate
// divided exactly by lengthening its period. nodes = 1 returns p.
//
// It is the local consistency tier's static division: each of N nodes
// counts alone with its share, so that together they admit about the
// limit without talking to each other. It is exact only when traffic is
// spread evenly over the nodes: a client whose requests all reach one
// node gets 1/N of its limit. Rounding down, the nodes together never
// admit more than the limit, except that no limit is divided below one.
func Divide(p Policy, nodes int) (Policy, error) {
	if nodes < 1 {
		return nil, fmt.Errorf("limit: node count %d must be at least 1", nodes)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if nodes == 1 {
		return p, nil
	}
	d, err := divide(p, int64(nodes))
	if err != nil {
		return nil, err
	}
	// A bucket whose rate was slowed while its burst stayed at one may
	// now take longer than MaxSpan to refill.
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("limit: divided by %d nodes: %w", nodes, err)
	}
	return d, nil
}

func divide(p Policy, n int64) (Policy, error) {
	switch p := p.(type) {
	case FixedWindow:
		p.Limit = max(p.Limit/n, 1)
		return p, nil
	case SlidingWindow:
		p.Limit = max(p.Limit/n, 1)
		return p, nil
	case SlidingLog:
		p.Limit = max(p.Limit/n, 1)
		return p, nil
	case TokenBucket:
		burst := p.Burst
		if burst == 0 {
			burst = p.Rate.Count
		}
		r, err := slower(p.Rate, n)
		if err != nil {
			return nil, err
		}
		p.Rate, p.Burst = r, max(burst/n, 1)
		return p, nil
	case LeakyBucket:
		r, err := slower(p.Rate, n)
		if err != nil {
			return nil, err
		}
		p.Rate, p.Burst, p.Delay = r, p.Burst/n, p.Delay/n
		return p, nil
	}
	return nil, fmt.Errorf("%w: limit: cannot divide %T", ErrInvalidPolicy, p)
}

// slower returns r/n: the same count over n times the period.
func slower(r Rate, n int64) (Rate, error) {
	if int64(r.Period) > math.MaxInt64/n {
		return r, fmt.Errorf("%w: limit: %v divided by %d overflows the period", ErrInvalidPolicy, r, n)
	}
	r.Period *= time.Duration(n)
	return r, nil
}
