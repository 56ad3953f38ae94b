package eventual

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/internal/applyall"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/store/redis"
)

// DefaultInterval is Config.Interval's default (the gateway gives an
// eventual rule's, rules.Rule.SyncInterval, defaulting to
// rules.DefaultSyncInterval).
const DefaultInterval = 100 * time.Millisecond

// Config configures a Store.
type Config struct {
	// Redis holds the global state. Required unless Central is set; the
	// Store does not close it.
	Redis *redis.Store
	// Central, when set, holds the global state in place of Redis: a
	// simulator's stand-in (package fleetsim). It must apply Sync's
	// charges as redis.Store.Sync does: add each cost unconditionally,
	// read the state back, and set Now. The Store's own code still
	// decides, keeps the deltas and lays them over each pulled state.
	Central Central
	// Interval is the sync period. Zero means
	// DefaultInterval (100ms); negative disables
	// the background sync (call Sync yourself, as tests do).
	Interval time.Duration
	// Clock returns the local time in Unix ns. Nil means the real clock.
	// It need not agree with Redis's: the Store decides on Redis's time,
	// estimated as Clock plus the offset measured at each sync.
	Clock func() int64
	// MaxKeys bounds the keys held locally. Zero means 65,536; beyond it
	// a new key is decided by Redis directly (strictly).
	MaxKeys int
}

// Central is where a Store pushes its deltas and pulls the global state:
// a *redis.Store, or a stand-in with the same arithmetic.
type Central interface {
	// Sync adds each charge's cost to its key and reads back its state
	// (see redis.Store.Sync).
	Sync(ctx context.Context, charges []redis.Charge) error
	// Apply decides one request centrally (strictly): the Store's way
	// when its local table is full.
	Apply(ctx context.Context, key string, p limit.Policy, cost int64) (limit.Decision, error)
}

// ErrSlidingLog reports a sliding log policy: it has no eventual tier.
var ErrSlidingLog = fmt.Errorf("%w: eventual: the sliding log cannot be synced; use the strict tier", limit.ErrInvalidPolicy)

// Store is a limit.Store that decides locally and syncs with Redis in the
// background. It is safe for concurrent use. Close stops the sync.
type Store struct {
	cfg     Config
	central Central      // cfg.Central, or cfg.Redis
	local   func() int64 // this node's clock
	offset  atomic.Int64 // Redis's clock minus local, measured at each sync
	seed    maphash.Seed
	shards  [32]shard
	max     int

	syncMu sync.Mutex // one sync at a time
	stats  syncStats
	// charges and where are Sync's buffers, reused (under syncMu).
	charges []redis.Charge
	where   []*entry
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

type shard struct {
	mu sync.Mutex
	m  map[string]*entry
}

// entry is a key's local view: the global state last pulled plus what this
// node admitted since (pending, not yet pushed).
type entry struct {
	p       limit.Stateful
	st      limit.State
	pending int64
	// pulled: a sync has read the key's global state. Until then an
	// entry is kept even when its local view is idle with nothing
	// pending, so that a key this node only peeks (cost 0: a counting
	// rule's peek, a penalty's check) still learns what the others
	// charged.
	pulled bool
}

// New returns a Store with its sync goroutine running (unless disabled).
func New(cfg Config) (*Store, error) {
	if cfg.Redis == nil && cfg.Central == nil {
		return nil, errors.New("eventual: Config.Redis is nil")
	}
	if cfg.MaxKeys < 0 {
		return nil, fmt.Errorf("eventual: MaxKeys %d must not be negative", cfg.MaxKeys)
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.MaxKeys == 0 {
		cfg.MaxKeys = 1 << 16
	}
	s := &Store{cfg: cfg, local: cfg.Clock, seed: maphash.MakeSeed(), max: max(cfg.MaxKeys/32, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	s.central = cfg.Central
	if s.central == nil {
		s.central = cfg.Redis
	}
	if s.local == nil {
		s.local = memory.NewClock()
	}
	for i := range s.shards {
		s.shards[i].m = make(map[string]*entry)
	}
	if cfg.Interval > 0 {
		go s.loop()
	} else {
		close(s.done)
	}
	return s, nil
}

// Close stops the background sync after one last push of the pending
// deltas (bounded by one interval).
func (s *Store) Close() error {
	s.once.Do(func() { close(s.stop) })
	<-s.done
	return nil
}

// now returns the time on Redis's clock, as estimated at the last sync.
func (s *Store) now() int64 { return s.local() + s.offset.Load() }

func (s *Store) loop() {
	defer close(s.done)
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	// Measure the skew at once rather than decide on the local clock
	// for a whole interval.
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Interval)
	s.Sync(ctx)
	cancel()
	for {
		select {
		case <-s.stop:
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Interval)
			s.Sync(ctx)
			cancel()
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Interval)
			s.Sync(ctx)
			cancel()
		}
	}
}

func (s *Store) shard(key string) *shard { return &s.shards[s.shardIndex(key)] }

func (s *Store) shardIndex(key string) int { return int(maphash.String(s.seed, key) & 31) }

// Apply decides locally against the key's local view. The first request
// for a key this node has not seen sees an empty view until the next sync.
func (s *Store) Apply(ctx context.Context, key string, p limit.Policy, cost int64) (limit.Decision, error) {
	if cost < 0 {
		return limit.Decision{}, limit.ErrNegativeCost
	}
	sp, err := stateful(p)
	if err != nil {
		return limit.Decision{}, err
	}
	now := s.now()
	sh := s.shard(key)
	sh.mu.Lock()
	e := sh.m[key]
	if e == nil {
		if len(sh.m) >= s.max && !s.evict(sh, now) {
			sh.mu.Unlock()
			return s.central.Apply(ctx, key, p, cost)
		}
		// A new key: start from an empty view; the next sync pulls the
		// global state.
		e = &entry{p: sp}
		sh.m[key] = e
	} else if e.p != sp {
		e.repolicy(sp)
	}
	st, d := sp.Decide(e.st, now, cost)
	if d.Allowed {
		e.st = st
		e.pending += cost
	}
	sh.mu.Unlock()
	d.Policy = p
	return d, nil
}

// ApplyAll decides every request locally, all or nothing, under the locks
// of every shard the requests touch (taken in shard order): allowed only if
// every request allows against the local views; when any refuses, no view
// is charged (see package applyall).
func (s *Store) ApplyAll(ctx context.Context, reqs []limit.Request) (limit.Decision, error) {
	return applyall.Apply((*batch)(s), reqs)
}

// batch is the Store as applyall sees its table. A key's working view is
// its state, the policy last named for it and the cost admitted.
type batch Store

type view struct {
	p    limit.Stateful
	st   limit.State
	cost int64
}

func (b *batch) Check(r limit.Request) (limit.Stateful, int, error) {
	sp, err := stateful(r.Policy)
	return sp, (*Store)(b).shardIndex(r.Key), err
}

func (b *batch) Ready() error { return nil }

func (b *batch) Mutex(i int) *sync.Mutex { return &b.shards[i].mu }

func (b *batch) Now() int64 { return (*Store)(b).now() }

func (b *batch) View(key string, i int, sp limit.Stateful, _ int64) view {
	v := view{p: sp}
	if e := b.shards[i].m[key]; e != nil && e.p == sp {
		v.st = e.st
	}
	return v
}

func (b *batch) Decide(_ string, _ int, sp limit.Stateful, v view, now, cost int64) (view, limit.Decision) {
	st, d := sp.Decide(v.st, now, cost)
	v.p = sp
	if d.Allowed {
		v.st = st
		v.cost += cost
	}
	return v, d
}

func (b *batch) Commit(key string, i int, v view, now int64) {
	sh := &b.shards[i]
	e := sh.m[key]
	if e == nil {
		if len(sh.m) >= b.max {
			(*Store)(b).evict(sh, now) // a full shard takes the key anyway: MaxKeys is exceeded by at most a batch
		}
		e = &entry{p: v.p}
		sh.m[key] = e
	} else if e.p != v.p {
		e.repolicy(v.p)
	}
	e.st = v.st
	e.pending += v.cost
}

// repolicy puts e under p (a changed policy: a config reload): the view
// starts empty, the next sync pulling the global state, but the delta
// admitted under the old policy stays pending, to be pushed under p, so
// nothing admitted is lost. The entry is kept, not replaced, so that a
// sync in flight subtracts what it pushed from this pending delta.
func (e *entry) repolicy(p limit.Stateful) {
	e.p, e.st = p, limit.State{}
}

func stateful(p limit.Policy) (limit.Stateful, error) {
	if err := limit.Check(p); err != nil {
		return nil, err
	}
	sp, ok := p.(limit.Stateful)
	if !ok {
		return nil, ErrSlidingLog
	}
	return sp, nil
}

// evict drops the shard's idle entries with nothing pending; it reports
// whether there is room now.
func (s *Store) evict(sh *shard, now int64) bool {
	for k, e := range sh.m {
		if e.pending == 0 && e.st.IsIdle(now) {
			delete(sh.m, k)
		}
	}
	return len(sh.m) < s.max
}

// Sync pushes every key's pending delta to Redis and pulls its global
// state, in one pipelined round trip per algorithm. The background loop
// calls it every Interval; tests call it directly. Keys idle locally with
// nothing pending are dropped instead, once a sync has pulled them (a key
// only peeked at cost 0 is pulled once: it may be busy elsewhere). A key whose charge fails keeps its
// delta pending for the next sync, while the others are settled; the
// error returned reports the failed keys. Every sync measures the offset
// from the local clock to Redis's (by reading a key when there is nothing
// to push).
func (s *Store) Sync(ctx context.Context) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	now := s.now()
	charges, where := s.charges[:0], s.where[:0]
	defer func() {
		// Keep the buffers, not what they point to.
		clear(charges)
		clear(where)
		s.charges, s.where = charges[:0], where[:0]
	}()
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, e := range sh.m {
			if e.pending == 0 && e.st.IsIdle(now) && e.pulled {
				delete(sh.m, k)
				continue
			}
			charges = append(charges, redis.Charge{Key: k, Policy: e.p, Cost: e.pending})
			where = append(where, e)
		}
		sh.mu.Unlock()
	}
	probe := len(charges) == 0
	if probe {
		charges = append(charges, redis.Charge{Key: clockKey, Policy: clockProbe})
	}
	t0 := s.local()
	err := s.central.Sync(ctx, charges)
	s.stats.record(t0, s.local(), len(charges), probe, err)
	if off, ok := skew(charges, t0, s.local()); ok {
		s.offset.Store(off)
	}
	if probe {
		return err
	}
	now = s.now()
	for i, c := range charges {
		if c.Err != nil {
			continue // the delta stays pending for the next sync
		}
		e := where[i]
		sh := s.shard(c.Key)
		sh.mu.Lock()
		// Redis has the pushed delta, whatever the policy now; admissions
		// since the snapshot stay pending.
		e.pending -= c.Cost
		if e.p == c.Policy {
			e.pulled = true
			// The global view, with the admissions since laid over it.
			// (After a policy change the next sync pulls the view.)
			e.st = c.State
			if e.pending > 0 {
				if st, d := e.p.Decide(e.st, now, e.pending); d.Allowed {
					e.st = st
				}
			}
		}
		sh.mu.Unlock()
	}
	return err
}

// Len returns the number of keys held locally: a node with none has
// nothing to push or pull, and a simulator stops syncing it.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}
