package memory

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// DefaultMaxKeys is Config.MaxKeys' default, and the gateway's
// (store.memory.max_keys): a million live keys, about 50 MB at most.
const DefaultMaxKeys = 1_000_000

// Config configures a Store. The zero Config is valid: every field has a
// documented default.
type Config struct {
	// MaxKeys bounds the number of live keys across all shards. Zero means
	// DefaultMaxKeys. Each shard holds at most MaxKeys/Shards (at least 1).
	MaxKeys int
	// Shards is the number of independently locked shards, rounded up to a
	// power of two. Zero means 256.
	Shards int
	// SweepInterval is how often the background sweeper visits each shard
	// to drop idle states. Zero means 10s; negative disables the sweeper
	// (idle states are then dropped only when found or evicted).
	SweepInterval time.Duration
	// Clock returns the current time in Unix nanoseconds. Nil means the
	// real clock, read through the monotonic clock (see NewClock).
	Clock func() int64
	// Recheck, when set, is read once before a request is refused: if it
	// is later than Clock's instant, the request is decided again at it.
	// It is for a Clock that may lag behind the real time, as a
	// CoarseClock does when its goroutine is starved of a processor: a
	// lagging clock refills too little and refuses what the limit allows
	// (never the reverse, for token and leaky buckets), and the recheck
	// takes those refusals back. CoarseClock.Refresh is the one to pass
	// with CoarseClock.Now. Nil means no recheck.
	Recheck func() int64
}

// Validate reports negative sizes.
func (c Config) Validate() error {
	var errs []error
	if c.MaxKeys < 0 {
		errs = append(errs, fmt.Errorf("memory: MaxKeys %d must not be negative", c.MaxKeys))
	}
	if c.Shards < 0 {
		errs = append(errs, fmt.Errorf("memory: Shards %d must not be negative", c.Shards))
	}
	return errors.Join(errs...)
}

// Store is a sharded, bounded in-memory limit.Store. It is safe for
// concurrent use. Close stops its sweeper.
type Store struct {
	shards    []shard
	shardBits uint
	perShard  int
	epochLen  int // new keys per shard epoch (see mark)
	seed      maphash.Seed
	now       func() int64
	recheck   func() int64 // nil: none (Config.Recheck)

	evictions atomic.Uint64
	expired   atomic.Uint64
	full      atomic.Uint64

	closeOnce sync.Once
	stop      chan struct{}
	done      chan struct{}
}

type shard struct {
	mu sync.Mutex
	// last is the latest instant a decision in this shard used. A
	// goroutine reads the clock before it waits for the lock; if another
	// decided meanwhile with a later instant, it reads the clock again
	// under the lock rather than decide with a stale now (behind a busy
	// key a stale now refuses spuriously once it lags the key's state by
	// more than the burst). The common, uncontended case costs a compare.
	last int64
	// prevH is the key of the shard's last locked decision; a key decided
	// twice in a row becomes the shard's hot key (see hotKey).
	prevH  uint64
	hot    atomic.Pointer[hotKey]
	states table // fixed-size states
	logs   map[uint64]*logEntry
	// epoch advances every Store.epochLen new keys; added counts them.
	epoch uint8
	added int
	_     [64]byte // keep neighbouring shards' locks off one cache line
}

// logEntry is a sliding log key: its log and its eviction mark.
type logEntry struct {
	log  limit.Log
	mark mark
}

// New returns a Store configured by cfg, with its sweeper running unless
// disabled. It returns an error only for an invalid cfg.
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxKeys == 0 {
		cfg.MaxKeys = DefaultMaxKeys
	}
	if cfg.Shards == 0 {
		cfg.Shards = 256
	}
	bits := uint(0)
	for 1<<bits < cfg.Shards {
		bits++
	}
	if cfg.SweepInterval == 0 {
		cfg.SweepInterval = 10 * time.Second
	}
	s := &Store{
		shards:    make([]shard, 1<<bits),
		shardBits: bits,
		perShard:  max(cfg.MaxKeys>>bits, 1),
		epochLen:  max(cfg.MaxKeys>>bits/epochsPerShard, 1),
		seed:      maphash.MakeSeed(),
		now:       cfg.Clock,
		recheck:   cfg.Recheck,
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	if s.now == nil {
		s.now = NewClock()
	}
	for i := range s.shards {
		s.shards[i].logs = make(map[uint64]*logEntry)
	}
	if cfg.SweepInterval > 0 {
		go s.sweep(cfg.SweepInterval)
	} else {
		close(s.done)
	}
	return s, nil
}

// Close stops the sweeper and waits for it. It is safe to call more than
// once; the store still answers after Close, without sweeping.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { close(s.stop) })
	<-s.done
	return nil
}

// hash returns key's hash and the index of its shard (from the hash's top
// bits; the maps use the low ones).
func (s *Store) hash(key string) (uint64, int) {
	h := maphash.String(s.seed, key)
	if s.shardBits == 0 {
		return h, 0
	}
	return h, int(h >> (64 - s.shardBits))
}

// Apply charges cost against key under p at the store's clock. It returns
// an error for a negative cost or an invalid policy, and ErrFull for a new
// key that finds no room (see the package documentation); never otherwise.
func (s *Store) Apply(_ context.Context, key string, p limit.Policy, cost int64) (limit.Decision, error) {
	if cost < 0 {
		return limit.Decision{}, limit.ErrNegativeCost
	}
	if err := limit.Check(p); err != nil {
		return limit.Decision{}, err
	}
	h, i := s.hash(key)
	sh := &s.shards[i]
	if tb, ok := p.(limit.TokenBucket); ok {
		var d limit.Decision
		if s.decideHot(&d, sh, tableKey(h), tb, cost) {
			d.Policy = p
			return d, nil
		}
	}
	now := s.now()
	sh.mu.Lock()
	now = s.fresh(sh, now)
	d, err := s.apply(sh, h, p, now, cost, nil)
	if err == nil && !d.Allowed && s.recheck != nil {
		// A refusal leaves the state as it was: deciding again at a
		// later instant is deciding once.
		if t := s.recheck(); t > now {
			sh.last = max(sh.last, t)
			d, err = s.apply(sh, h, p, t, cost, nil)
		}
	}
	sh.mu.Unlock()
	d.Policy = p
	return d, err
}

// fresh returns now, or, if another decision in the shard used a later
// instant while this one waited for the lock, a new reading of the clock
// (which a clock that really went back may still leave earlier: the
// algorithms clamp that themselves). The shard's lock must be held.
func (s *Store) fresh(sh *shard, now int64) int64 {
	if now < sh.last {
		now = s.now()
	}
	sh.last = max(sh.last, now)
	return now
}

// undo remembers what one request of an ApplyAll changed.
type undo struct {
	sh      *shard
	h       uint64
	old     limit.State
	existed bool
	log     *limit.Log // non-nil: roll this log back
}

// apply decides one request on a locked shard. When u is not nil it
// records how to take the change back.
func (s *Store) apply(sh *shard, h uint64, p limit.Policy, now, cost int64, u *undo) (limit.Decision, error) {
	switch p := p.(type) {
	case limit.Stateful:
		h = tableKey(h)
		sh.demoteKey(h, now)
		if i := sh.states.find(h); i >= 0 && u == nil {
			// The common case, an existing key alone: update in place.
			slot := &sh.states.slots[i]
			next, d := p.Decide(slot.st, now, cost)
			switch {
			case next != slot.st:
				slot.st = next
				slot.setMark(sh.markFor(d))
				if h == sh.prevH {
					sh.promote(h, next, p, now)
				}
			case next.IsIdle(now):
				sh.states.removeAt(i)
				s.expired.Add(1)
			default:
				slot.setMark(sh.markFor(d))
			}
			sh.prevH = h
			return d, nil
		}
		i := sh.states.find(h)
		var st limit.State
		if i >= 0 {
			st = sh.states.slots[i].st
		}
		next, d := p.Decide(st, now, cost)
		switch {
		case next != st:
			if i < 0 {
				if err := s.makeRoom(sh, h, now); err != nil {
					return limit.Decision{}, err
				}
			}
			if u != nil {
				*u = undo{sh: sh, h: h, old: st, existed: i >= 0}
			}
			sh.states.put(h, next, sh.markFor(d))
		case i < 0:
		case st.IsIdle(now):
			sh.states.removeAt(i)
			s.expired.Add(1)
		default:
			sh.states.slots[i].setMark(sh.markFor(d))
		}
		return d, nil
	case limit.Logged:
		e := sh.logs[h]
		fresh := e == nil
		if fresh {
			e = new(logEntry)
		}
		d := p.DecideLog(&e.log, now, cost)
		switch {
		case e.log.Len() == 0:
			if !fresh {
				delete(sh.logs, h)
			}
			return d, nil
		case fresh:
			if err := s.makeRoom(sh, h, now); err != nil {
				return limit.Decision{}, err
			}
			sh.logs[h] = e
		}
		e.mark = sh.markFor(d)
		if u != nil && d.Allowed && cost > 0 {
			*u = undo{sh: sh, h: h, log: &e.log}
		}
		return d, nil
	}
	return limit.Decision{}, fmt.Errorf("memory: policy %v implements neither limit.Stateful nor limit.Logged", p)
}

// sweep drops idle states, one shard at a time, until Close.
func (s *Store) sweep(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		for i := range s.shards {
			select {
			case <-s.stop:
				return
			default:
			}
			s.sweepShard(&s.shards[i], s.now())
		}
	}
}

func (s *Store) sweepShard(sh *shard, now int64) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.demote(now)
	n := 0
	t := &sh.states
	for i := 0; i < len(t.slots); {
		if t.slots[i].h != 0 && t.slots[i].st.IsIdle(now) {
			t.removeAt(i) // may shift a later entry into i: look again
			n++
			continue
		}
		i++
	}
	t.shrink()
	for h, e := range sh.logs {
		if e.log.IdleAt() <= now {
			delete(sh.logs, h)
			n++
		}
	}
	s.expired.Add(uint64(n))
}

// Stats describes a Store's contents and history.
type Stats struct {
	Keys      int    // live keys now, idle ones not yet dropped included
	Evictions uint64 // keys dropped before they were idle, to make room
	Expired   uint64 // idle keys dropped (losslessly)
	Full      uint64 // new keys not stored, every candidate being limited (ErrFull)
}

// Stats returns the store's current counts. It locks each shard briefly.
func (s *Store) Stats() Stats {
	st := Stats{Evictions: s.evictions.Load(), Expired: s.expired.Load(), Full: s.full.Load()}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		st.Keys += sh.states.n + len(sh.logs)
		sh.mu.Unlock()
	}
	return st
}
