package local

import (
	"fmt"
	"math"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// Divide returns p's share for one of nodes nodes: a window's limit and a
// bucket's burst divided (rounded down, at least one; a leaky bucket's
// burst and delay may reach zero, which is valid), and a bucket's rate
// divided exactly by lengthening its period. nodes = 1 returns p.
func Divide(p limit.Policy, nodes int) (limit.Policy, error) {
	if nodes < 1 {
		return nil, fmt.Errorf("local: node count %d must be at least 1", nodes)
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
	// now take longer than limit.MaxSpan to refill.
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("local: divided by %d nodes: %w", nodes, err)
	}
	return d, nil
}

func divide(p limit.Policy, n int64) (limit.Policy, error) {
	switch p := p.(type) {
	case limit.FixedWindow:
		p.Limit = max(p.Limit/n, 1)
		return p, nil
	case limit.SlidingWindow:
		p.Limit = max(p.Limit/n, 1)
		return p, nil
	case limit.SlidingLog:
		p.Limit = max(p.Limit/n, 1)
		return p, nil
	case limit.TokenBucket:
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
	case limit.LeakyBucket:
		r, err := slower(p.Rate, n)
		if err != nil {
			return nil, err
		}
		p.Rate, p.Burst, p.Delay = r, p.Burst/n, p.Delay/n
		return p, nil
	}
	return nil, fmt.Errorf("%w: local: cannot divide %T", limit.ErrInvalidPolicy, p)
}

// slower returns r/n: the same count over n times the period.
func slower(r limit.Rate, n int64) (limit.Rate, error) {
	if int64(r.Period) > math.MaxInt64/n {
		return r, fmt.Errorf("%w: local: %v divided by %d overflows the period", limit.ErrInvalidPolicy, r, n)
	}
	r.Period *= time.Duration(n)
	return r, nil
}
