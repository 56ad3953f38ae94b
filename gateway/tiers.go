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

// tierStores supplies the stores of the rules' consistency tiers
// (rules.Config.Stores), all over the gateway's one store connection:
//
//	strict    the Redis store, with the rule's failure mode (WithFailure)
//	eventual  an eventual.Store over the Redis store, one per sync interval
//	local     an in-memory store (the gateway's own when the store is in
//	          memory); the rule engine divides the policies by nodes
//
// Stores are made on first use and kept until the gateway closes, so that
// a reload keeps their counts.
type tierStores struct {
	redis  *redis.Store // nil when the store is in memory
	onFail redis.FailMode
	mem    *memory.Store       // the gateway's memory store, if any
	clock  *memory.CoarseClock // the memory stores' clock, nil for the real one

	mu       sync.Mutex
	eventual map[time.Duration]*eventual.Store
	local    *memory.Store // made for local rules when mem is nil
	closed   bool
}

// defaultSyncInterval is eventual.Config.Interval's default.
const defaultSyncInterval = 100 * time.Millisecond

// localMaxKeys bounds the keys of the local rules' own memory store.
const localMaxKeys = 1 << 20

// store is a rules.StoreFunc.
func (t *tierStores) store(r rules.Rule) (limit.Store, error) {
	switch r.Consistency {
	case rules.ConsistencyStrict:
		if t.redis == nil {
			return nil, errors.New("needs store.redis")
		}
		if r.OnError == "" {
			return t.redis, nil
		}
		mode, err := redis.ParseFailMode(r.OnError)
		if err != nil {
			return nil, err
		}
		if mode == t.onFail {
			return t.redis, nil // one store, so charged with the default rules atomically
		}
		return t.redis.WithFailure(mode), nil
	case rules.ConsistencyEventual:
		if t.redis == nil {
			return nil, errors.New("needs store.redis")
		}
		iv := r.SyncInterval
		if iv == 0 {
			iv = defaultSyncInterval
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
			s, err := memory.New(memoryConfig(localMaxKeys, t.clock))
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
