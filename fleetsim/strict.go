package fleetsim

import (
	"context"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// strictSim is the strict tier: every node sends every request to one
// central store. A real fleet's is store/redis, whose scripts run package
// limit's algorithms; here it is one store/memory on the fleet's clock,
// and the traffic is counted as one script call and its reply per
// request (their size estimated, see resp.go).
type strictSim struct {
	p           limit.Policy
	central     *memory.Store
	msgs, bytes int64
}

func newStrict(f *Fleet) (*strictSim, error) {
	m, err := newMemory(f)
	if err != nil {
		return nil, err
	}
	return &strictSim{p: f.cfg.Policy, central: m}, nil
}

func (s *strictSim) decide(_ int, _ int32, key string, cost int64) (bool, bool, error) {
	d, err := s.central.Apply(context.Background(), key, s.p, cost)
	s.msgs += 2
	s.bytes += int64(scriptCallBytes(len(key), cost) + scriptReplyBytes)
	return d.Allowed, false, err
}

func (s *strictSim) tick(int) bool { return false }

func (s *strictSim) traffic() (int64, int64, bool) { return s.msgs, s.bytes, true }

func (s *strictSim) close() { s.central.Close() }
