package gateway

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/eventual"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/store/redis"
)

// tierStores supplies the stores of the rules (the engine's and, through
// rules.Config.Stores, those of the consistency tiers), all over the
// gateway's one store connection:
//
//	default   the memory store, or the Redis store answering its failures
//	          by the rules' failure mode (WithFailure)
//	strict    the Redis store, with the rule's failure mode (WithFailure)
//	eventual  an eventual.Store over the Redis store, one per sync interval
//	local     an in-memory store (the gateway's own when the store is in
//	          memory); the rule engine divides the policies by nodes
//
// Stores are made on first use and kept until the gateway closes, so that
// a reload keeps their counts.
type tierStores struct {
	redis *redis.Store        // nil when the store is in memory
	mem   *memory.Store       // the gateway's memory store, if any
	clock *memory.CoarseClock // the memory stores' clock, nil for the real one

	mu       sync.Mutex
	eventual map[time.Duration]*eventual.Store
	local    *memory.Store // made for local rules when mem is nil
	closed   bool
}

// engineStore returns the store of the rules without a tier, whose
// failure mode is onError (rules.Config.OnErrorOf): the memory store, or
// a view of the Redis store answering by that mode.
func (t *tierStores) engineStore(onError string) (limit.Store, error) {
	if t.redis == nil {
		return t.mem, nil
	}
	return t.onRedis(onError)
}

// onRedis returns the view of the Redis store that answers its failures
// by mode. Views of one mode are equal, so the rule engine charges the
// rules that share a mode together, atomically.
func (t *tierStores) onRedis(mode string) (limit.Store, error) {
	m, err := redis.ParseFailMode(mode)
	if err != nil {
		return nil, err
	}
	return t.redis.WithFailure(m), nil
}

// storeFunc returns the rules.StoreFunc of cfg: each rule's store, with
// its failure mode as cfg.OnErrorOf decides it.
func (t *tierStores) storeFunc(cfg *rules.Config) rules.StoreFunc {
	c := *cfg
	return func(r rules.Rule) (limit.Store, error) { return t.store(r, c.OnErrorOf(&r)) }
}

// store returns the store of r, a rule with a tier, whose failure mode is
// onError.
func (t *tierStores) store(r rules.Rule, onError string) (limit.Store, error) {
	switch r.Consistency {
	case rules.ConsistencyStrict:
		if t.redis == nil {
			return nil, errors.New("needs store.redis")
		}
		return t.onRedis(onError)
	case rules.ConsistencyEventual:
		if t.redis == nil {
			return nil, errors.New("needs store.redis")
		}
		iv := r.SyncInterval
		if iv == 0 {
			iv = eventual.DefaultInterval
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.closed {
			return nil, errors.New("gateway closed")
		}
		if s := t.eventual[iv]; s != nil {
			return s, nil
		}
		s, err := eventual.New(eventual.Config{Redis: t.redis, Interval: iv})
		if err != nil {
			return nil, err
		}
		if t.eventual == nil {
			t.eventual = map[time.Duration]*eventual.Store{}
		}
		t.eventual[iv] = s
		return s, nil
	case rules.ConsistencyLocal:
		if t.mem != nil {
			return t.mem, nil
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.closed {
			return nil, errors.New("gateway closed")
		}
		if t.local == nil {
			s, err := memory.New(memoryConfig(memory.DefaultMaxKeys, t.clock))
			if err != nil {
				return nil, err
			}
			t.local = s
		}
		return t.local, nil
	}
	return nil, fmt.Errorf("unknown consistency %q", r.Consistency)
}

// close stops the eventual stores (each pushes its last deltas) and the
// local store; the caller closes the Redis and memory stores after.
func (t *tierStores) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for _, s := range t.eventual {
		s.Close()
	}
	if t.local != nil {
		t.local.Close()
	}
}

// refusesWithoutRedis returns the names of cfg's enforced rules that wait
// on Redis (the engine's store when it is Redis, or strict) and whose
// failure mode is closed: those that refuse every request while Redis is
// down.
func refusesWithoutRedis(cfg *rules.Config, onRedis bool) []string {
	if !onRedis {
		return nil
	}
	var names []string
	for i := range cfg.Rules {
		r := &cfg.Rules[i]
		switch r.Consistency {
		case "", rules.ConsistencyDefault, rules.ConsistencyStrict:
		default:
			continue
		}
		if !r.Shadow && cfg.OnErrorOf(r) == rules.OnErrorClosed {
			names = append(names, r.Name)
		}
	}
	return names
}
