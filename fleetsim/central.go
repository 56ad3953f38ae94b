package fleetsim

import (
	"context"
	"errors"
	"math"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/redis"
)

// central stands in for the eventual tier's Redis (eventual.Central):
// one state per key, on the fleet's clock. A sync's charge adds its cost
// unconditionally, as the tier's Redis scripts do with their force flag:
// here by the policy's own Decide on an unbounded twin of it (the same
// algorithm with a capacity no fleet reaches), which never refuses, and
// whose state means the same as the policy's (see unbounded). Syncs are
// lost with the fleet's Loss: then no charge is applied, and the tier's
// own code keeps its deltas for the next sync.
type central struct {
	f      *Fleet
	p      limit.Stateful
	twin   limit.Stateful
	states map[string]*limit.State
	loss   float64
	n      uint64 // syncs, to draw losses

	msgs, bytes int64
}

// errLost is a sync lost on the simulated network.
var errLost = errors.New("fleetsim: sync lost")

func newCentral(f *Fleet, p limit.Stateful) (*central, error) {
	twin, err := unbounded(p)
	if err != nil {
		return nil, err
	}
	return &central{f: f, p: p, twin: twin, states: make(map[string]*limit.State), loss: f.cfg.Loss}, nil
}

// Sync applies a node's charges, as redis.Store.Sync does.
func (c *central) Sync(_ context.Context, charges []redis.Charge) error {
	now := c.f.now
	c.n++
	lost := c.loss > 0 && lossDraw(c.f.cfg.Seed, c.n, 0) < c.loss
	for i := range charges {
		ch := &charges[i]
		c.msgs += 2
		c.bytes += int64(scriptCallBytes(len(ch.Key), ch.Cost) + scriptReplyBytes)
		ch.State, ch.Now, ch.Err = limit.State{}, 0, nil
		if lost {
			ch.Err = errLost
			continue
		}
		if ch.Cost < 0 {
			ch.Err = limit.ErrNegativeCost
			continue
		}
		ps := c.states[ch.Key]
		if ps == nil {
			if ch.Cost == 0 {
				ch.Now = now // an absent key: the zero State
				continue
			}
			ps = new(limit.State)
			c.states[ch.Key] = ps
		}
		if ps.IsIdle(now) {
			*ps = limit.State{}
		}
		if ch.Cost > 0 {
			*ps, _ = c.twin.Decide(*ps, now, ch.Cost)
		}
		ch.State, ch.Now = *ps, now
	}
	if lost {
		return errLost
	}
	return nil
}

// Apply decides one request centrally: the tier's way for a key its full
// local table has no room for.
func (c *central) Apply(_ context.Context, key string, _ limit.Policy, cost int64) (limit.Decision, error) {
	now := c.f.now
	c.msgs += 2
	c.bytes += int64(scriptCallBytes(len(key), cost) + scriptReplyBytes)
	ps := c.states[key]
	if ps == nil {
		ps = new(limit.State)
		c.states[key] = ps
	}
	if ps.IsIdle(now) {
		*ps = limit.State{}
	}
	var d limit.Decision
	*ps, d = c.p.Decide(*ps, now, cost)
	return d, nil
}

// sweep forgets the idle states (Redis's TTLs).
func (c *central) sweep() {
	now := c.f.now
	for k, ps := range c.states {
		if ps.IsIdle(now) {
			delete(c.states, k)
		}
	}
}

// unbounded returns p's algorithm with a capacity no fleet reaches: with
// no refusal an algorithm's state does not depend on its capacity, so
// its Decide adds any cost as the force flag of the Redis scripts does.
func unbounded(p limit.Stateful) (limit.Stateful, error) {
	const huge = int64(1) << 40
	switch q := p.(type) {
	case limit.FixedWindow:
		return limit.FixedWindow{Limit: huge, Window: q.Window}, nil
	case limit.SlidingWindow:
		return limit.SlidingWindow{Limit: huge, Window: q.Window}, nil
	case limit.TokenBucket:
		// Keep capacity × interval far from saturation.
		return limit.TokenBucket{Rate: q.Rate, Burst: min(huge, (math.MaxInt64>>2)/max(q.Rate.Interval(), 1))}, nil
	case limit.LeakyBucket:
		return limit.LeakyBucket{Rate: q.Rate, Burst: min(huge, (math.MaxInt64>>2)/max(q.Rate.Interval(), 1)), Mode: limit.Police}, nil
	}
	return nil, errors.New("fleetsim: no unbounded twin for " + p.Algorithm().String())
}
