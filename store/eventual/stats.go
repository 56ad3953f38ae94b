package eventual

import (
	"sync/atomic"
	"time"
)

// Stats are a Store's sync figures, for dashboards and metrics.
type Stats struct {
	// Syncs and Failures count the syncs tried and those that failed
	// (Redis unreachable, a key's charge refused).
	Syncs, Failures uint64
	// LastOK is when the last successful sync ended, on the store's
	// clock (Config.Clock; zero before the first). Lag is how long ago that
	// was, as of Stats: how old the global view may be, besides the
	// interval.
	LastOK time.Duration
	Lag    time.Duration
	// RoundTrip is the last sync's duration; Keys the keys it pushed
	// (none for a clock probe).
	RoundTrip time.Duration
	Keys      int
}

// syncStats are the figures Sync records, read without its lock.
type syncStats struct {
	syncs, failures atomic.Uint64
	lastOK          atomic.Int64 // local clock, nanoseconds; 0 before the first
	roundTrip       atomic.Int64
	keys            atomic.Int64
}

// record notes a sync from t0 to t1 (local clock) of n charges.
func (s *syncStats) record(t0, t1 int64, n int, probe bool, err error) {
	s.syncs.Add(1)
	s.roundTrip.Store(t1 - t0)
	if probe {
		n = 0
	}
	s.keys.Store(int64(n))
	if err != nil {
		s.failures.Add(1)
		return
	}
	s.lastOK.Store(t1)
}

// Stats returns the sync figures. It is safe for concurrent use.
func (s *Store) Stats() Stats {
	st := Stats{
		Syncs: s.stats.syncs.Load(), Failures: s.stats.failures.Load(),
		RoundTrip: time.Duration(s.stats.roundTrip.Load()), Keys: int(s.stats.keys.Load()),
	}
	if ok := s.stats.lastOK.Load(); ok != 0 {
		st.LastOK = time.Duration(ok)
		st.Lag = time.Duration(s.local() - ok)
	}
	return st
}
