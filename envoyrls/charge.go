package envoyrls

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/logthrottle"
	"github.com/tollgate-dev/tollgate/limit"
)

// Charging is how a Service counts, envoyproxy/ratelimit's settings
// about its counters. Every field has a documented zero-value default.
//
// A limit of envoyproxy/ratelimit's own algorithm (a fixed window of its
// unit, no tollgate_algorithm) is counted as envoyproxy/ratelimit counts
// it: an integer per key and window in Counters, incremented by the hits
// whether or not they are over the limit (INCRBY) and expiring after the
// unit (EXPIRE), the key envoyproxy/ratelimit's own
// (CACHE_KEY_PREFIX + "domain_key_value_..._" + the window's start in
// Unix seconds), so that counts survive an edit of the limit and a
// tollgate replacing envoyproxy/ratelimit on its Redis carries them on.
// The limits of tollgate's other algorithms are decided by the Store.
type Charging struct {
	// Counters holds the counters of envoyproxy/ratelimit's algorithm.
	// Nil means the Store's when it has them (a *redis.Store), else
	// counters kept in the Store itself (any limit.Store, such as the
	// memory one).
	Counters Counters
	// CacheKeyPrefix starts every counter key (CACHE_KEY_PREFIX). Empty by
	// default, as envoyproxy/ratelimit's.
	CacheKeyPrefix string
	// StopIncrementWhenOverLimit is STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT,
	// as envoyproxy/ratelimit applies it: the counts are read first
	// (GET), and when a descriptor would go over its limit (or is in the
	// local cache) only the descriptors going over are incremented, the
	// others not. False (the default) increments every descriptor.
	StopIncrementWhenOverLimit bool
	// LocalCacheBytes, when positive, keeps the keys found over their
	// limit in memory until their window ends, answered OVER_LIMIT
	// without Counters (LOCAL_CACHE_SIZE_IN_BYTES; the bound of their
	// bytes). Zero (the default) keeps none: every decision reads the
	// counters, so deleting a key in Redis unblocks its client at once.
	LocalCacheBytes int
	// ExpirationJitter is the most a key's time to live is lengthened,
	// at random, beyond its unit (EXPIRATION_JITTER_MAX_SECONDS), in whole
	// seconds. Zero adds none. It is not applied to counters kept in the
	// Store.
	ExpirationJitter time.Duration
	// OnError is the answer when Counters or the Store fails.
	// failmode.Unset (the default) is envoyproxy/ratelimit's: the call
	// fails (gRPC Unknown, /json 400), and Envoy's failure_mode_deny
	// decides. failmode.Open answers OK, Closed OVER_LIMIT, Local decides
	// with LocalStore (TOLLGATE_REDIS_ON_ERROR). Every such answer is counted in
	// tollgate_rls_store_fallbacks_total and logged at most once a second.
	OnError failmode.Mode
	// LocalStore decides when OnError is "local". Required then.
	LocalStore limit.Store
	// Logger receives the fallback lines; nil logs nothing.
	Logger *slog.Logger
}

// Counters holds envoyproxy/ratelimit's counters: an integer per key with
// a time to live. *redis.Store implements it with INCRBY and EXPIRE, or
// GET, pipelined in one round trip.
type Counters interface {
	// IncrExpire adds hits[i] to keys[i], sets its time to live to
	// ttl[i] seconds, and writes the count after the increment to
	// out[i].
	IncrExpire(ctx context.Context, keys []string, hits, ttl, out []int64) error
	// Counts reads keys' counts into out, 0 for a missing key; ttl[i]
	// is the time to live IncrExpire sets on keys[i] (counters kept as
	// windows need it, Redis does not).
	Counts(ctx context.Context, keys []string, ttl, out []int64) error
}

// validate reports a Charging that cannot work.
func (c *Charging) validate() error {
	switch c.OnError {
	case failmode.Unset, failmode.Open, failmode.Closed:
	case failmode.Local:
		if c.LocalStore == nil {
			return errors.New("envoyrls: OnError local needs a LocalStore")
		}
	default:
		return fmt.Errorf("envoyrls: unknown OnError %q (want open, closed or local)", c.OnError)
	}
	if c.LocalCacheBytes < 0 || c.ExpirationJitter < 0 {
		return errors.New("envoyrls: negative LocalCacheBytes or ExpirationJitter")
	}
	return nil
}

// charging is a Service's counting state, set up by New.
type charging struct {
	counters Counters
	jitter   int64 // seconds; 0 for counters kept in the Store
	local    Counters
	cache    *overCache
	log      *logthrottle.Logger
}

// setupCharging fills s.ch from s.cfg.
func (s *Service) setupCharging() {
	c := &s.cfg.Charging
	s.ch.counters = c.Counters
	if s.ch.counters == nil {
		if sc, ok := s.cfg.Store.(Counters); ok {
			s.ch.counters = sc
		}
	}
	if s.ch.counters != nil {
		s.ch.jitter = int64(c.ExpirationJitter / time.Second)
	} else {
		s.ch.counters = storeCounters{s.cfg.Store}
	}
	if c.LocalStore != nil {
		s.ch.local = storeCounters{c.LocalStore}
	}
	if c.LocalCacheBytes > 0 {
		s.ch.cache = newOverCache(c.LocalCacheBytes)
	}
	s.ch.log = logthrottle.New(c.Logger, logthrottle.Config{Every: time.Second})
}

// counted reports whether l is counted as envoyproxy/ratelimit counts:
// a fixed window of its unit (requests_per_unit 0 included), not a
// tollgate_algorithm.
func (l *Limit) counted() bool {
	if l == nil || l.Unlimited || unitLength(l.Unit) == 0 {
		return false
	}
	if l.Policy == nil {
		return true
	}
	fw, ok := l.Policy.(limit.FixedWindow)
	return ok && fw.Window == unitLength(l.Unit)
}

// keyOf is the key of a descriptor under l: envoyproxy/ratelimit's for a
// counted limit, else a hash for the Store.
func (s *Service) keyOf(domain string, entries []*rlv3.RateLimitDescriptor_Entry, shared []string, l *Limit, now time.Time) string {
	if l.counted() {
		return cacheKey(s.cfg.CacheKeyPrefix, domain, entries, shared, l.Unit, now, s.cfg.MaxBytes)
	}
	return counterKey(domain, entries, shared, l)
}

// cacheKey is envoyproxy/ratelimit's counter key (its
// CacheKeyGenerator): prefix, domain, "_", each entry's key and value
// (a shared level's pattern in place of the value, a value over maxValue
// bytes by its digest: boundedValue) each followed by "_", and the start
// of the unit's window containing now, in Unix seconds. Built on the
// stack up to 256 bytes: the string is its one allocation.
func cacheKey(prefix, domain string, entries []*rlv3.RateLimitDescriptor_Entry, shared []string, unit rlsv3.RateLimitResponse_RateLimit_Unit, now time.Time, maxValue int) string {
	var stack [256]byte
	b := append(append(append(stack[:0], prefix...), domain...), '_')
	for i, e := range entries {
		v := boundedValue(e.GetValue(), maxValue)
		if i < len(shared) && shared[i] != "" {
			v = shared[i]
		}
		b = append(append(append(append(b, e.GetKey()...), '_'), v...), '_')
	}
	div := int64(unitLength(unit) / time.Second)
	sec := now.Unix()
	b = strconv.AppendInt(b, sec/div*div, 10)
	return string(b)
}

// boundedValue is v, or when v is longer than max bytes "sha256:" and
// the hex of its digest's first 16 bytes: what a counter key or a
// metric label holds of a value, so that neither is as long as what a
// client sent. (envoyproxy/ratelimit's key holds such a value raw: its
// count is not shared with tollgate's.)
func boundedValue(v string, max int) string {
	if len(v) <= max {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	var b [7 + 32]byte
	copy(b[:], "sha256:")
	hex.Encode(b[7:], sum[:16])
	return string(b[:])
}

// charge decides the items: the counted ones by their counters, the
// others by the Store. A failure is answered by OnError; with the default
// it is the call's error, a gRPC status.
func (s *Service) charge(ctx context.Context, items []item, now time.Time) error {
	var idxStack [4]int
	idx := idxStack[:0]
	others := false
	for i := range items {
		switch l := items[i].limit; {
		case l.counted():
			idx = append(idx, i)
		case l != nil && l.Policy != nil:
			others = true
		}
	}
	if len(idx) > 0 {
		if err := s.chargeCounters(ctx, items, idx, now); err != nil {
			return err
		}
	}
	if others {
		if err := s.decide(ctx, items); err != nil {
			// The Store answers Redis's failures by its own failure
			// mode: what remains is the caller's context, an invalid
			// policy.
			s.cfg.Metrics.fallback(failmode.Unset)
			return status.Error(codes.Unknown, "store: "+err.Error())
		}
	}
	return nil
}

// failed is the answer to a store failure err: counted and logged, and
// with OnError empty the call's error.
func (s *Service) failed(err error) error {
	s.cfg.Metrics.fallback(s.cfg.OnError)
	s.ch.log.Log(context.Background(), slog.LevelError, "envoy-rls: store failed; answered by on_error",
		slog.String("on_error", onErrorName(s.cfg.OnError)), slog.String("error", err.Error()))
	if s.cfg.OnError == failmode.Unset {
		return status.Error(codes.Unknown, err.Error())
	}
	return nil
}

func onErrorName(s failmode.Mode) string {
	if s == failmode.Unset {
		return "error"
	}
	return string(s)
}

// chargeCounters decides items[idx], all counted limits, as
// envoyproxy/ratelimit's fixed-window cache does (DoLimit).
func (s *Service) chargeCounters(ctx context.Context, items []item, idx []int, now time.Time) error {
	n := len(idx)
	sc := scratchPool.Get().(*scratch)
	defer sc.put()
	keys, hits, ttl, out, counts := sc.keys[:0], sc.hits[:0], sc.ttl[:0], sc.out[:0], sc.counts[:0]
	var cachedStack, overStack [4]bool
	cached, over := cachedStack[:n], overStack[:n]
	if n > len(cachedStack) {
		cached, over = make([]bool, n), make([]bool, n)
	}
	for range n {
		out = append(out, 0)
	}
	// Keys over their limit in the local cache are answered from it and
	// not incremented.
	anyCached := false
	if s.ch.cache != nil {
		for j, i := range idx {
			if s.ch.cache.has(items[i].key, now.UnixNano()) {
				cached[j], anyCached = true, true
			}
		}
	}
	anyOver := false
	if s.cfg.StopIncrementWhenOverLimit && !anyCached {
		for _, i := range idx {
			keys = append(keys, items[i].key)
			ttl = append(ttl, int64(unitLength(items[i].limit.Unit)/time.Second))
			counts = append(counts, 0)
		}
		sc.counts = counts
		if err := s.ch.counters.Counts(ctx, keys, ttl, counts); err != nil {
			return s.counterFallback(ctx, err, items, idx, cached, now)
		}
		for j, i := range idx {
			if counts[j]+items[i].cost > int64(items[i].limit.RequestsPerUnit) {
				over[j], anyOver = true, true
			}
		}
		keys, ttl = keys[:0], ttl[:0]
	}
	var pos [4]int // position in keys of each idx entry, -1 if not sent
	posOf := pos[:0]
	if n > len(pos) {
		posOf = make([]int, 0, n)
	}
	for j, i := range idx {
		if cached[j] {
			posOf = append(posOf, -1)
			continue
		}
		it := &items[i]
		h := it.cost
		if s.cfg.StopIncrementWhenOverLimit && (anyCached || (anyOver && !over[j])) {
			h = 0
		}
		t := int64(unitLength(it.limit.Unit) / time.Second)
		if s.ch.jitter > 0 {
			t += rand.Int64N(s.ch.jitter)
		}
		posOf = append(posOf, len(keys))
		keys, hits, ttl = append(keys, it.key), append(hits, h), append(ttl, t)
	}
	if len(keys) > 0 {
		sc.keys, sc.hits, sc.ttl, sc.out = keys, hits, ttl, out
		if err := s.ch.counters.IncrExpire(ctx, keys, hits, ttl, out[:len(keys)]); err != nil {
			return s.counterFallback(ctx, err, items, idx, cached, now)
		}
	}
	for j, i := range idx {
		it := &items[i]
		rpu := int64(it.limit.RequestsPerUnit)
		d := limit.Decision{Limit: rpu, ResetAfter: untilUnitEnd(now, it.limit.Unit)}
		if p := posOf[j]; p >= 0 {
			after := out[p]
			if after <= rpu {
				d.Allowed, d.Remaining = true, rpu-after
			} else {
				// Over: the hits were counted all the same. Remaining is
				// the room before them, for the metrics' split.
				d.Remaining = rpu - (after - it.cost)
				if s.ch.cache != nil {
					s.ch.cache.add(it.key, now.UnixNano(), now.Add(d.ResetAfter).UnixNano())
				}
			}
		}
		it.d, it.decided = d, true
	}
	return nil
}

// scratch is chargeCounters's slices, kept from call to call: handed
// to Counters (an interface), arrays on the stack would escape.
type scratch struct {
	keys                   []string
	hits, ttl, out, counts []int64
}

var scratchPool = sync.Pool{New: func() any {
	return &scratch{keys: make([]string, 0, 4), hits: make([]int64, 0, 4), ttl: make([]int64, 0, 4), out: make([]int64, 0, 4), counts: make([]int64, 0, 4)}
}}

// put returns sc to the pool, its keys released.
func (sc *scratch) put() {
	if cap(sc.keys) > 64 {
		return
	}
	clear(sc.keys[:cap(sc.keys)])
	scratchPool.Put(sc)
}

// gaveUp reports whether the caller's context has ended or reached its
// deadline: the Redis client times a call out by the context's deadline
// on its own timer, which can fire an instant before the context's.
func gaveUp(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// counterFallback answers the counted items after the counters failed
// with err, by OnError, unless the caller's context ended.
func (s *Service) counterFallback(ctx context.Context, err error, items []item, idx []int, cached []bool, now time.Time) error {
	if gaveUp(ctx) {
		// The caller gave up (Envoy's timeout, a reset stream): not a
		// store failure, and no one reads the answer.
		if ctx.Err() == nil {
			return status.Error(codes.DeadlineExceeded, context.DeadlineExceeded.Error())
		}
		return status.FromContextError(ctx.Err()).Err()
	}
	if e := s.failed(err); e != nil {
		return e
	}
	for j, i := range idx {
		it := &items[i]
		rpu := int64(it.limit.RequestsPerUnit)
		d := limit.Decision{Limit: rpu, ResetAfter: untilUnitEnd(now, it.limit.Unit)}
		switch {
		case cached[j] || s.cfg.OnError == failmode.Closed:
		case s.cfg.OnError == failmode.Open:
			d.Allowed, d.Remaining = true, rpu
		default: // local
			var out [1]int64
			if lerr := s.ch.local.IncrExpire(context.Background(), []string{it.key}, []int64{it.cost}, []int64{int64(unitLength(it.limit.Unit) / time.Second)}, out[:]); lerr != nil {
				return status.Error(codes.Unknown, lerr.Error())
			}
			if out[0] <= rpu {
				d.Allowed, d.Remaining = true, rpu-out[0]
			} else {
				d.Remaining = rpu - (out[0] - it.cost)
			}
		}
		it.d, it.decided = d, true
	}
	return nil
}

// storeCounters keeps counters in a limit.Store: each key a fixed window
// of its time to live, aligned to the epoch, so large that it counts
// every hit (an envoyproxy/ratelimit counter's window is its unit, its
// key naming the window, so the two end together).
type storeCounters struct{ st limit.Store }

// counterLimit is the window's limit: no count reaches it.
const counterLimit = 1 << 50

// unitPolicies are the counters' policies of each unit, built once.
var unitPolicies = func() map[int64]limit.Policy {
	m := map[int64]limit.Policy{}
	for _, w := range []time.Duration{time.Second, time.Minute, time.Hour, 24 * time.Hour, 7 * 24 * time.Hour, 30 * 24 * time.Hour, 365 * 24 * time.Hour} {
		m[int64(w/time.Second)] = limit.FixedWindow{Limit: counterLimit, Window: w}
	}
	return m
}()

func counterPolicy(ttl int64) limit.Policy {
	if p, ok := unitPolicies[ttl]; ok {
		return p
	}
	return limit.FixedWindow{Limit: counterLimit, Window: time.Duration(max(ttl, 1)) * time.Second}
}

func (c storeCounters) IncrExpire(ctx context.Context, keys []string, hits, ttl, out []int64) error {
	for i, k := range keys {
		d, err := c.st.Apply(ctx, k, counterPolicy(ttl[i]), hits[i])
		if err != nil {
			return err
		}
		out[i] = counterLimit - d.Remaining
	}
	return nil
}

func (c storeCounters) Counts(ctx context.Context, keys []string, ttl, out []int64) error {
	for i, k := range keys {
		d, err := c.st.Apply(ctx, k, counterPolicy(ttl[i]), 0)
		if err != nil {
			return err
		}
		out[i] = counterLimit - d.Remaining
	}
	return nil
}

// fallbackMetric is tollgate_rls_store_fallbacks_total.
func fallbackMetric() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "tollgate", Subsystem: "rls", Name: "store_fallbacks_total",
		Help: "Decisions answered by on_error because Redis (or the store) failed, by answer: error (the call failed, as envoyproxy/ratelimit's), open, closed or local.",
	}, []string{"answer"})
}

// fallback counts one answer by on_error.
func (m *Metrics) fallback(onError failmode.Mode) {
	if m != nil {
		m.fallbacks.WithLabelValues(onErrorName(onError)).Inc()
	}
}
