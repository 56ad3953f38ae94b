package observe

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate-dev/tollgate/store/gossip"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/store/redis"
	stores "github.com/tollgate-dev/tollgate/storeopen"
)

// RedisCollector exports a Redis store's state and counters (redis.Stats,
// read once per scrape): whether decisions reach Redis, the breaker, the
// failures and the decisions each failure mode answered. Without these a
// Redis outage answered by the failure modes is invisible.
type RedisCollector struct{ S *redis.Store }

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
func (RedisCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{redisUpDesc, redisConnectedDesc, redisBreakerOpenDesc, redisBreakerTripsDesc,
		redisFailuresDesc, redisFailoverDesc, redisShortCircuitsDesc, redisDecisionsDesc, redisCacheHitsDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c RedisCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.S.Stats()
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

// MemoryCollector exports the memory store's counts (memory.Stats, read
// once per scrape): its live keys, and what its bound cost: keys evicted
// before they were idle, and new keys refused because every key that
// could make room was being limited (limit.ErrFull).
type MemoryCollector struct{ S *memory.Store }

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
func (MemoryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- memoryKeysDesc
	ch <- memoryEvictionsDesc
	ch <- memoryFullDesc
}

// Collect implements prometheus.Collector.
func (c MemoryCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.S.Stats()
	ch <- prometheus.MustNewConstMetric(memoryKeysDesc, prometheus.GaugeValue, float64(st.Keys))
	ch <- prometheus.MustNewConstMetric(memoryEvictionsDesc, prometheus.CounterValue, float64(st.Evictions))
	ch <- prometheus.MustNewConstMetric(memoryFullDesc, prometheus.CounterValue, float64(st.Full))
}

// GossipCollector exports the gossip node's membership and traffic
// (gossip.Stats, read once per scrape) and the gossip rules' decisions
// answered before the node was warm (stores.Set.ColdDecisions).
type GossipCollector struct {
	S    *gossip.Store
	Cold func() stores.ColdDecisions
}

var (
	gossipMembersDesc = prometheus.NewDesc("tollgate_gossip_members",
		"Gossip fleet members by state as this gateway sees them: alive (itself included), suspect (a probe went unanswered), dead (died or left in the last hour; their counts keep counting until their windows end).",
		[]string{"state"}, nil)
	gossipWarmDesc = prometheus.NewDesc("tollgate_gossip_warm",
		"1 once this gateway has exchanged state with the fleet (its gossip rules decide); 0 while they answer by their failure mode.", nil, nil)
	gossipKeysDesc = prometheus.NewDesc("tollgate_gossip_keys",
		"Keys tracked by the gossip node, this gateway's and its peers', idle ones not yet swept included.", nil, nil)
	gossipBytesDesc = prometheus.NewDesc("tollgate_gossip_bytes_total",
		"Gossip payload bytes (before encryption) by direction (sent, received) and kind (delta: the rounds' changed counters; state: the full push/pull exchanges).",
		[]string{"direction", "kind"}, nil)
	gossipMessagesDesc = prometheus.NewDesc("tollgate_gossip_messages_total",
		"Gossip round messages by direction (a message sent to n peers counts n times).", []string{"direction"}, nil)
	gossipPushPullsDesc = prometheus.NewDesc("tollgate_gossip_push_pulls_total",
		"Full state exchanges merged.", nil, nil)
	gossipDroppedDesc = prometheus.NewDesc("tollgate_gossip_dropped_total",
		"Gossip dropped without changing a count, by reason: decode (a message that failed to decode), key (a packet not sealed with the secret key), absurd (a count beyond 4 × the limit), future (a window starting more than the allowed skew, 30 s, ahead, or one naming this gateway ahead of its own window), skew (a message stamped by a gateway whose clock is more than 30 s from this one's fleet time), mismatch (a key whose policy differs from this gateway's), full (a key not learned, the key table full), value (a shared value, such as an adaptive factor, that failed to decode, lay outside [0, 1], was stamped ahead or found no room), oversize (a stream, TCP, announcing more than store.gossip.max_state_bytes, closed unread), busy (a stream closed unread, the streams being read holding state_bytes_in_flight or 128 being open).",
		[]string{"reason"}, nil)
	gossipEvictionsDesc = prometheus.NewDesc("tollgate_gossip_evictions_total",
		"Keys dropped before they were idle to make room for new ones in a full key table (never a key being limited): raise store.gossip.max_keys if it grows.", nil, nil)
	gossipMergeLagDesc = prometheus.NewDesc("tollgate_gossip_merge_lag_seconds",
		"In the last round that sent anything, the age of the oldest change it sent: how long an admission waited before it left this gateway (about one interval; more when the rounds are over their byte budget).", nil, nil)
	gossipUnsentDesc = prometheus.NewDesc("tollgate_gossip_oldest_unsent_seconds",
		"Age of the oldest change this gateway has not sent yet (0 when none waits).", nil, nil)
	gossipColdDesc = prometheus.NewDesc("tollgate_gossip_cold_decisions_total",
		"Gossip rule decisions answered by the failure mode (open, closed, local) because this gateway was not warm yet.", []string{"mode"}, nil)
)

// Describe implements prometheus.Collector.
func (GossipCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{gossipMembersDesc, gossipWarmDesc, gossipKeysDesc, gossipBytesDesc, gossipMessagesDesc,
		gossipPushPullsDesc, gossipDroppedDesc, gossipEvictionsDesc, gossipMergeLagDesc, gossipUnsentDesc, gossipColdDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c GossipCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.S.Stats()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(gossipMembersDesc, float64(st.Alive), "alive")
	gauge(gossipMembersDesc, float64(st.Suspect), "suspect")
	gauge(gossipMembersDesc, float64(st.Dead), "dead")
	warm := 0.0
	if st.Warm {
		warm = 1
	}
	gauge(gossipWarmDesc, warm)
	gauge(gossipKeysDesc, float64(st.Keys))
	counter(gossipBytesDesc, st.BytesSent, "sent", "delta")
	counter(gossipBytesDesc, st.BytesReceived, "received", "delta")
	counter(gossipBytesDesc, st.StateBytesSent, "sent", "state")
	counter(gossipBytesDesc, st.StateBytesReceived, "received", "state")
	counter(gossipMessagesDesc, st.MessagesSent, "sent")
	counter(gossipMessagesDesc, st.MessagesReceived, "received")
	counter(gossipPushPullsDesc, st.PushPulls)
	counter(gossipEvictionsDesc, st.Evicted)
	counter(gossipDroppedDesc, st.Dropped.Malformed, "decode")
	counter(gossipDroppedDesc, st.Dropped.Unauthenticated, "key")
	counter(gossipDroppedDesc, st.Dropped.Absurd, "absurd")
	counter(gossipDroppedDesc, st.Dropped.Future, "future")
	counter(gossipDroppedDesc, st.Dropped.Skew, "skew")
	counter(gossipDroppedDesc, st.Dropped.Mismatch, "mismatch")
	counter(gossipDroppedDesc, st.Dropped.Full, "full")
	counter(gossipDroppedDesc, st.Dropped.Oversize, "oversize")
	counter(gossipDroppedDesc, st.Dropped.Busy, "busy")
	counter(gossipDroppedDesc, c.S.ValueStats().Dropped, "value")
	gauge(gossipMergeLagDesc, st.MergeLag.Seconds())
	gauge(gossipUnsentDesc, st.OldestUnsent.Seconds())
	cold := c.Cold()
	counter(gossipColdDesc, cold.Open, "open")
	counter(gossipColdDesc, cold.Closed, "closed")
	counter(gossipColdDesc, cold.Local, "local")
}
