package redis

// Stats are a Store's counters since New, for metrics.
type Stats struct {
	// Decisions answered by a Redis script.
	Decisions uint64
	// CacheHits are refusals answered by the over-limit cache, without a
	// round trip.
	CacheHits uint64
	// CacheEntries is the over-limit cache's current size.
	CacheEntries int
	// Failures are round trips that failed (Timeouts of them timed out).
	Failures, Timeouts uint64
	// ShortCircuits are decisions the open breaker kept from Redis.
	ShortCircuits uint64
	// FailOpen, FailClosed and FailLocal count decisions answered by each
	// failure mode.
	FailOpen, FailClosed, FailLocal uint64
	// BreakerTrips counts the breaker's openings; BreakerOpen is its state.
	BreakerTrips uint64
	BreakerOpen  bool
}

// Stats returns the current counters.
func (s *Store) Stats() Stats {
	st := Stats{
		Decisions:     s.stats.decisions.Load(),
		CacheHits:     s.stats.cacheHits.Load(),
		Failures:      s.stats.failures.Load(),
		Timeouts:      s.stats.timeouts.Load(),
		ShortCircuits: s.stats.shortCircuit.Load(),
		FailOpen:      s.stats.failOpen.Load(),
		FailClosed:    s.stats.failClosed.Load(),
		FailLocal:     s.stats.failLocal.Load(),
		BreakerTrips:  s.breaker.trips.Load(),
		BreakerOpen:   s.breaker.open(),
	}
	if s.cache != nil {
		st.CacheEntries = s.cache.len()
	}
	return st
}
