package fleetsim

import (
	"context"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// localSim is the local tier, divided: each node enforces its share of
// the limit (limit.Divide) in its own store/memory, alone.
type localSim struct {
	p     limit.Policy
	nodes []*memory.Store
}

func newLocal(f *Fleet) (*localSim, error) {
	p, err := limit.Divide(f.cfg.Policy, f.cfg.Nodes)
	if err != nil {
		return nil, err
	}
	s := &localSim{p: p}
	for range f.cfg.Nodes {
		m, err := newMemory(f)
		if err != nil {
			s.close()
			return nil, err
		}
		s.nodes = append(s.nodes, m)
	}
	return s, nil
}

// newMemory returns a store/memory on the fleet's clock, with no
// background sweep (idle keys are dropped when met or evicted).
func newMemory(f *Fleet) (*memory.Store, error) {
	return memory.New(memory.Config{Clock: f.clock, SweepInterval: -1, Shards: 1, MaxKeys: 1 << 20})
}

func (s *localSim) decide(node int, _ int32, key string, cost int64) (bool, bool, error) {
	d, err := s.nodes[node].Apply(context.Background(), key, s.p, cost)
	return d.Allowed, false, err
}

func (s *localSim) tick(int) bool { return false }

func (s *localSim) traffic() (int64, int64, bool) { return 0, 0, false }

func (s *localSim) close() {
	for _, m := range s.nodes {
		m.Close()
	}
}
