package gossip

import (
	"context"
	"sync"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/internal/applyall"
)

// Apply decides locally against the key's counters, this node's and the
// merged view of the others'.
func (s *Store) Apply(ctx context.Context, key string, p limit.Policy, cost int64) (limit.Decision, error) {
	if cost < 0 {
		return limit.Decision{}, limit.ErrNegativeCost
	}
	if len(key) > MaxKeyLen {
		return limit.Decision{}, ErrKeyTooLong
	}
	sp, sh, err := shapeOf(p)
	if err != nil {
		return limit.Decision{}, err
	}
	if !s.warm.Load() {
		return limit.Decision{}, ErrNotWarm
	}
	// The decision is written out here rather than in a table method: a
	// call returning the Decision cost the hot path about 20 ns of 150 in
	// CPU profiles.
	now := s.clock()
	w := max(now, 0) / sh.period
	shd := &s.shards[s.shardIndex(key)]
	shd.mu.Lock()
	defer shd.mu.Unlock()
	e := shd.m[key]
	var own counter
	if e != nil && e.sh == sh {
		own = e.own(s.self)
	}
	v := e.viewWith(w, s.self, own, sh)
	st, m := sh.state(v, w, now)
	_, d := sp.Decide(st, now, cost)
	d.Policy = p
	if e != nil {
		e.used = now
	}
	if !d.Allowed || cost == 0 {
		return d, nil
	}
	if e == nil {
		if e = s.newEntry(shd, key, sh, now); e == nil {
			return limit.Decision{}, ErrFull
		}
	} else if e.sh != sh {
		e.reshape(sh)
	}
	sh.charge(&own, v, m, w, now, cost)
	if s.setOwn(shd, e, own, cost, now, s.retransmits()) {
		s.nudge(now)
	}
	return d, nil
}

// ApplyAll decides every request locally, all or nothing, under the locks
// of every shard the requests touch (taken in shard order; see package
// applyall).
func (s *Store) ApplyAll(ctx context.Context, reqs []limit.Request) (limit.Decision, error) {
	return applyall.Apply((*batch)(s), reqs)
}

// batch is the Store as applyall sees its table: a checked request is its
// policy and shape; a key's working view is this node's counter, charged
// with the batch's admissions, under one shape.
type batch Store

type checked struct {
	sp limit.Stateful
	sh shape
}

type charge struct {
	own  counter
	sh   shape
	cost int64
}

func (b *batch) Check(r limit.Request) (checked, int, error) {
	if len(r.Key) > MaxKeyLen {
		return checked{}, 0, ErrKeyTooLong
	}
	sp, sh, err := shapeOf(r.Policy)
	return checked{sp: sp, sh: sh}, (*Store)(b).shardIndex(r.Key), err
}

func (b *batch) Ready() error {
	if !b.warm.Load() {
		return ErrNotWarm
	}
	return nil
}

func (b *batch) Mutex(i int) *sync.Mutex { return &b.shards[i].mu }

func (b *batch) Now() int64 { return b.clock() }

func (b *batch) View(key string, i int, w checked, _ int64) charge {
	c := charge{sh: w.sh}
	if e := b.shards[i].m[key]; e != nil && e.sh == w.sh {
		c.own = e.own(b.self)
	}
	return c
}

func (b *batch) Decide(key string, i int, w checked, c charge, now, cost int64) (charge, limit.Decision) {
	if c.sh != w.sh {
		c = b.View(key, i, w, now) // a key named under two shapes: the last one counts
	}
	e := b.shards[i].m[key]
	if e != nil && e.sh != w.sh {
		e = nil // a changed policy starts from nothing
	}
	win := max(now, 0) / w.sh.period
	v := e.viewWith(win, b.self, c.own, w.sh)
	st, m := w.sh.state(v, win, now)
	_, d := w.sp.Decide(st, now, cost)
	if d.Allowed && cost > 0 {
		w.sh.charge(&c.own, v, m, win, now, cost)
		c.cost += cost
	}
	return c, d
}

func (b *batch) Commit(key string, i int, c charge, now int64) {
	if c.cost == 0 {
		return
	}
	shd := &b.shards[i]
	e := shd.m[key]
	if e == nil {
		// A full table takes the key anyway: MaxKeys is exceeded by at
		// most a batch, and what was admitted is never lost.
		e = &entry{key: key, sh: c.sh}
		shd.m[key] = e
	} else if e.sh != c.sh {
		e.reshape(c.sh)
	}
	if s := (*Store)(b); s.setOwn(shd, e, c.own, c.cost, now, s.retransmits()) {
		s.nudge(now)
	}
}
