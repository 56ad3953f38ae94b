package gateway

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/store/redis"
)

// redisCollector exports a Redis store's state and counters (redis.Stats,
// read once per scrape): whether decisions reach Redis, the breaker, the
// failures and the decisions each failure mode answered. Without these a
// Redis outage answered by the failure modes is invisible.
type redisCollector struct{ s *redis.Store }

var (
	redisUpDesc = prometheus.NewDesc("tollgate_redis_up",
		"1 when decisions go to Redis (connected, breaker closed), 0 while they follow the failure mode.", nil, nil)
	redisConnectedDesc = prometheus.NewDesc("tollgate_redis_connected",
		"1 once the store has reached Redis (it keeps trying in the background until then).", nil, nil)
	redisBreakerOpenDesc = prometheus.NewDesc("tollgate_redis_breaker_open",
		"1 while the circuit breaker is open (Redis is not tried; a probe tests it every cooldown).", nil, nil)
	redisBreakerTripsDesc = prometheus.NewDesc("tollgate_redis_breaker_trips_total",
		"Times the circuit breaker opened.", nil, nil)
	redisFailuresDesc = prometheus.NewDesc("tollgate_redis_failures_total",
		"Redis failures by kind: error (a round trip failed), timeout (it timed out), reply (Redis answered with an error), connect (a connection attempt failed).",
		[]string{"kind"}, nil)
	redisFailoverDesc = prometheus.NewDesc("tollgate_redis_failover_decisions_total",
		"Decisions answered by a failure mode (open, closed, local) because Redis could not decide.", []string{"mode"}, nil)
	redisShortCircuitsDesc = prometheus.NewDesc("tollgate_redis_short_circuits_total",
		"Decisions kept from Redis because the breaker was open or the store not yet connected.", nil, nil)
	redisDecisionsDesc = prometheus.NewDesc("tollgate_redis_decisions_total",
		"Decisions answered by a Redis script.", nil, nil)
	redisCacheHitsDesc = prometheus.NewDesc("tollgate_redis_cache_hits_total",
		"Refusals answered by the over-limit cache without a round trip.", nil, nil)
)

// Describe implements prometheus.Collector.
func (redisCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{redisUpDesc, redisConnectedDesc, redisBreakerOpenDesc, redisBreakerTripsDesc,
		redisFailuresDesc, redisFailoverDesc, redisShortCircuitsDesc, redisDecisionsDesc, redisCacheHitsDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c redisCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	gauge := func(d *prometheus.Desc, b bool) {
		v := 0.0
		if b {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(redisUpDesc, st.Up())
	gauge(redisConnectedDesc, st.Connected)
	gauge(redisBreakerOpenDesc, st.BreakerOpen)
	counter(redisBreakerTripsDesc, st.BreakerTrips)
	counter(redisFailuresDesc, st.Failures-st.Timeouts, "error")
	counter(redisFailuresDesc, st.Timeouts, "timeout")
	counter(redisFailuresDesc, st.ReplyErrors, "reply")
	counter(redisFailuresDesc, st.DialFailures, "connect")
	counter(redisFailoverDesc, st.FailOpen, "open")
	counter(redisFailoverDesc, st.FailClosed, "closed")
	counter(redisFailoverDesc, st.FailLocal, "local")
	counter(redisShortCircuitsDesc, st.ShortCircuits)
	counter(redisDecisionsDesc, st.Decisions)
	counter(redisCacheHitsDesc, st.CacheHits)
}

// memoryCollector exports the memory store's counts (memory.Stats, read
// once per scrape): its live keys, and what its bound cost: keys evicted
// before they were idle, and new keys refused because every key that
// could make room was being limited (limit.ErrFull).
type memoryCollector struct{ s *memory.Store }

var (
	memoryKeysDesc = prometheus.NewDesc("tollgate_store_live_keys",
		"Keys held by the store, idle ones not yet swept included.", nil, prometheus.Labels{"store": "memory"})
	memoryEvictionsDesc = prometheus.NewDesc("tollgate_store_evictions_total",
		"Keys dropped before they were idle to make room for new ones (never a key being limited): raise store.memory.max_keys if it grows.",
		nil, prometheus.Labels{"store": "memory"})
	memoryFullDesc = prometheus.NewDesc("tollgate_store_full_total",
		"New keys the store had no room for, every key that could make room being limited; their requests were refused.",
		nil, prometheus.Labels{"store": "memory"})
)

// Describe implements prometheus.Collector.
func (memoryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- memoryKeysDesc
	ch <- memoryEvictionsDesc
	ch <- memoryFullDesc
}

// Collect implements prometheus.Collector.
func (c memoryCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	ch <- prometheus.MustNewConstMetric(memoryKeysDesc, prometheus.GaugeValue, float64(st.Keys))
	ch <- prometheus.MustNewConstMetric(memoryEvictionsDesc, prometheus.CounterValue, float64(st.Evictions))
	ch <- prometheus.MustNewConstMetric(memoryFullDesc, prometheus.CounterValue, float64(st.Full))
}
