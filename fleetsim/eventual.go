package fleetsim

import (
	"context"
	"fmt"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/eventual"
)

// eventualSim is the eventual tier: each node is a store/eventual with
// its background sync off, synced by the fleet every Interval (at the
// node's phase) against one central stand-in for Redis. The tier's own
// code decides, keeps the pending deltas, pushes them and lays them over
// the pulled state; the stand-in only adds and reads back.
type eventualSim struct {
	p       limit.Policy
	central *central
	nodes   []*eventual.Store
	syncs   int64
}

func newEventual(f *Fleet) (*eventualSim, error) {
	sp, ok := f.cfg.Policy.(limit.Stateful)
	if !ok {
		return nil, fmt.Errorf("%w", eventual.ErrSlidingLog)
	}
	c, err := newCentral(f, sp)
	if err != nil {
		return nil, err
	}
	s := &eventualSim{p: f.cfg.Policy, central: c}
	for range f.cfg.Nodes {
		n, err := eventual.New(eventual.Config{Central: c, Interval: -1, Clock: f.clock})
		if err != nil {
			return nil, err
		}
		s.nodes = append(s.nodes, n)
	}
	return s, nil
}

func (s *eventualSim) decide(node int, _ int32, key string, cost int64) (bool, bool, error) {
	d, err := s.nodes[node].Apply(context.Background(), key, s.p, cost)
	return d.Allowed, err == nil, err
}

// tick syncs the node; it keeps syncing while it holds keys (a node
// holding none would only measure the clock).
func (s *eventualSim) tick(node int) bool {
	n := s.nodes[node]
	n.Sync(context.Background()) // a lost sync keeps its deltas: nothing to report
	s.syncs++
	if s.syncs%(1<<16) == 0 {
		s.central.sweep()
	}
	return n.Len() > 0
}

func (s *eventualSim) traffic() (int64, int64, bool) { return s.central.msgs, s.central.bytes, true }

func (s *eventualSim) close() {
	for _, n := range s.nodes {
		n.Close()
	}
}
