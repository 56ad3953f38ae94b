package memory

import (
	"context"
	"hash/maphash"
	"sync"

	"github.com/tollgate-dev/tollgate/limit"
)

// slotShards spreads the keys of Slots over this many locks.
const slotShards = 64

// Slots is a limit.Slots in this process's memory: a count of held slots
// per key, the key forgotten when its count returns to zero. The zero
// Slots is not usable: make one with NewSlots. Safe for concurrent use.
type Slots struct {
	seed   maphash.Seed
	shards [slotShards]slotShard
}

type slotShard struct {
	mu   sync.Mutex
	held map[string]int64
	_    [40]byte // keep shards on separate cache lines
}

// NewSlots returns an empty Slots.
func NewSlots() *Slots {
	s := &Slots{seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].held = map[string]int64{}
	}
	return s
}

func (s *Slots) shard(key string) *slotShard {
	return &s.shards[maphash.String(s.seed, key)%slotShards]
}

// Acquire takes a slot of key if fewer than max are held. The lease is
// always 1: in memory a slot is a count, any release frees one.
func (s *Slots) Acquire(_ context.Context, key string, max int64) (limit.Slot, error) {
	sh := s.shard(key)
	sh.mu.Lock()
	n := sh.held[key]
	if n >= max {
		sh.mu.Unlock()
		return limit.Slot{Held: n}, nil
	}
	sh.held[key] = n + 1
	sh.mu.Unlock()
	return limit.Slot{OK: true, Lease: 1, Held: n + 1}, nil
}

// Release gives back one slot of key; a key with none held is left
// alone.
func (s *Slots) Release(_ context.Context, key string, lease limit.Lease) error {
	if lease == 0 {
		return nil
	}
	sh := s.shard(key)
	sh.mu.Lock()
	switch n := sh.held[key]; {
	case n > 1:
		sh.held[key] = n - 1
	case n == 1:
		delete(sh.held, key)
	}
	sh.mu.Unlock()
	return nil
}

// Held returns the slots of key held now.
func (s *Slots) Held(key string) int64 {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.held[key]
}

// Keys returns how many keys hold a slot.
func (s *Slots) Keys() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.held)
		sh.mu.Unlock()
	}
	return n
}
