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
	// ReplyErrors are decisions Redis answered with an error reply (a
	// key holding a value that is not the algorithm's state, a script
	// error), answered by the failure mode instead.
	ReplyErrors uint64
	// DialFailures are failed attempts to make the first connection.
	DialFailures uint64
	// ShortCircuits are decisions kept from Redis because the breaker
	// was open or the store had not connected yet.
	ShortCircuits uint64
	// FailOpen, FailClosed and FailLocal count decisions answered by each
	// failure mode.
	FailOpen, FailClosed, FailLocal uint64
	// BreakerTrips counts the breaker's openings; BreakerOpen is its state.
	BreakerTrips uint64
	BreakerOpen  bool
	// Connected reports that the store has made its connection (it
	// tries in the background until it has).
	Connected bool
}

// Up reports whether decisions go to Redis: connected, breaker closed.
func (st Stats) Up() bool { return st.Connected && !st.BreakerOpen }

// Stats returns the current counters.
func (s *Store) Stats() Stats {
	st := Stats{
		Decisions:     s.stats.decisions.Load(),
		CacheHits:     s.stats.cacheHits.Load(),
		Failures:      s.stats.failures.Load(),
		Timeouts:      s.stats.timeouts.Load(),
		ReplyErrors:   s.stats.replyErrors.Load(),
		DialFailures:  s.stats.dialFailures.Load(),
		Connected:     s.conn.Load() != nil,
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
