package fleetsim

import (
	"context"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// exact is the single-counter answer every tier is measured against: the
// policy in one store/memory that sees every request, in time order.
type exact struct {
	p limit.Policy
	m *memory.Store
}

func newExact(f *Fleet) (*exact, error) {
	m, err := newMemory(f)
	if err != nil {
		return nil, err
	}
	return &exact{p: f.cfg.Policy, m: m}, nil
}

func (e *exact) decide(key string, cost int64) (bool, error) {
	d, err := e.m.Apply(context.Background(), key, e.p, cost)
	return d.Allowed, err
}
