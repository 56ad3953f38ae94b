// Package applyall is the all-or-nothing apply across keys that the
// eventual and gossip stores share (their ApplyAll): several requests,
// such as a route's limits, decided as one over a store's sharded key
// table.
//
// Apply checks every request, then takes the lock of every shard the
// requests touch, in shard order (every batch agrees on it, so concurrent
// batches cannot deadlock), and decides each request on a working view of
// its key: a key named twice sees its first charge. Only when every
// request allows are the views committed to the table; when any refuses,
// no key is charged. Every request is decided, so the merged decision is
// the most restrictive of all (limit.Merge), with Index naming it.
//
// The store supplies its table as a Table; Apply allocates nothing for a
// batch of up to OnStack requests.
package applyall

import (
	"slices"
	"sync"

	"github.com/tollgate-dev/tollgate/limit"
)

// OnStack is how many requests Apply handles without allocating.
const OnStack = 8

// Table is a store's sharded key table as Apply sees it. W is what the
// store makes of a checked request (its policy's state machine, say); V
// is a key's working view during a batch: what the store needs to decide
// the key's next request and to commit its charges.
type Table[W, V any] interface {
	// Check validates request r, whose cost is known not to be negative,
	// and returns what the decisions need of it and its key's shard.
	Check(r limit.Request) (W, int, error)
	// Ready is asked once every request has been checked, before any
	// lock is taken: a non-nil error is Apply's (a store that cannot
	// decide yet).
	Ready() error
	// Mutex returns the lock of shard i.
	Mutex(i int) *sync.Mutex
	// Now returns the time to decide at, read under the locks.
	Now() int64
	// View returns the working view of key (in shard i) for w, the first
	// request of the batch that names it, as the table holds the key.
	View(key string, i int, w W, now int64) V
	// Decide decides w's cost on v, key's working view, at now: it
	// returns the decision and v, charged with cost when allowed.
	Decide(key string, i int, w W, v V, now, cost int64) (V, limit.Decision)
	// Commit stores v, key's working view once every request allowed,
	// in the table. The batch's keys are committed in the order the
	// requests first name them.
	Commit(key string, i int, v V, now int64)
}

// work is one key of a batch and its working view.
type work[V any] struct {
	key   string
	shard int
	v     V
}

// Apply decides reqs as one over t, all or nothing (see the package
// doc). An empty batch is allowed; a negative cost is
// limit.ErrNegativeCost; any other refusal to decide is Check's or
// Ready's error, before any lock is taken.
func Apply[W, V any, T Table[W, V]](t T, reqs []limit.Request) (limit.Decision, error) {
	if len(reqs) == 0 {
		return limit.Decision{Allowed: true}, nil
	}
	var (
		checkedBuf [OnStack]W
		shardBuf   [OnStack]int
		lockBuf    [OnStack]int
		keyBuf     [OnStack]work[V]
	)
	checked, shards, locks, keys := checkedBuf[:0], shardBuf[:0], lockBuf[:0], keyBuf[:0]
	for _, r := range reqs {
		if r.Cost < 0 {
			return limit.Decision{}, limit.ErrNegativeCost
		}
		w, i, err := t.Check(r)
		if err != nil {
			return limit.Decision{}, err
		}
		checked = append(checked, w)
		shards = append(shards, i)
		if !slices.Contains(locks, i) {
			locks = append(locks, i)
		}
	}
	if err := t.Ready(); err != nil {
		return limit.Decision{}, err
	}
	slices.Sort(locks)
	for _, i := range locks {
		t.Mutex(i).Lock()
	}
	defer func() {
		for _, i := range locks {
			t.Mutex(i).Unlock()
		}
	}()
	now := t.Now()
	var out limit.Decision
	for n, r := range reqs {
		k := index(keys, r.Key)
		if k < 0 {
			keys = append(keys, work[V]{key: r.Key, shard: shards[n], v: t.View(r.Key, shards[n], checked[n], now)})
			k = len(keys) - 1
		}
		v, d := t.Decide(r.Key, shards[n], checked[n], keys[k].v, now, r.Cost)
		keys[k].v = v
		d.Policy, d.Index = r.Policy, n
		if n == 0 {
			out = d
		} else {
			out = limit.Merge(out, d)
		}
	}
	if !out.Allowed {
		return out, nil
	}
	for _, k := range keys {
		t.Commit(k.key, k.shard, k.v, now)
	}
	return out, nil
}

// index returns the place of key in keys, or -1. A batch holds a route's
// few limits: a scan is quicker than a map.
func index[V any](keys []work[V], key string) int {
	for i := range keys {
		if keys[i].key == key {
			return i
		}
	}
	return -1
}
