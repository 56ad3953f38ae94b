package memory

import (
	"context"
	"slices"

	"github.com/tollgate-dev/tollgate/limit"
)

// batchOnStack is how many requests ApplyAll handles without allocating.
const batchOnStack = 8

// ApplyAll applies several requests as one, under the locks of every shard
// they touch (taken in shard order, so concurrent batches cannot deadlock):
// allowed only if every request allows; when any refuses, nothing is
// charged. Every request is decided, so the merged decision is the most
// restrictive of all of them, with Index naming it.
func (s *Store) ApplyAll(_ context.Context, reqs []limit.Request) (limit.Decision, error) {
	if len(reqs) == 0 {
		return limit.Decision{Allowed: true}, nil
	}
	for _, r := range reqs {
		if r.Cost < 0 {
			return limit.Decision{}, limit.ErrNegativeCost
		}
		if err := limit.Check(r.Policy); err != nil {
			return limit.Decision{}, err
		}
	}
	var (
		hashBuf  [batchOnStack]uint64
		shardBuf [batchOnStack]int
		lockBuf  [batchOnStack]int
		undoBuf  [batchOnStack]undo
	)
	hashes, shards, locks, undos := hashBuf[:0], shardBuf[:0], lockBuf[:0], undoBuf[:0]
	for _, r := range reqs {
		h, i := s.hash(r.Key)
		hashes = append(hashes, h)
		shards = append(shards, i)
		if !slices.Contains(locks, i) {
			locks = append(locks, i)
		}
	}
	// Lock in shard order: every batch agrees on it.
	slices.Sort(locks)
	now := s.now()
	for _, i := range locks {
		s.shards[i].mu.Lock()
	}
	for _, i := range locks { // see Store.fresh
		if now < s.shards[i].last {
			now = s.now()
			break
		}
	}
	for _, i := range locks {
		s.shards[i].last = max(s.shards[i].last, now)
	}
	out, undos, err := s.applyBatch(reqs, hashes, shards, now, undos)
	if err == nil && !out.Allowed && s.recheck != nil {
		// Decided again at a later instant, once: see Config.Recheck.
		if t := s.recheck(); t > now {
			for _, i := range locks {
				s.shards[i].last = max(s.shards[i].last, t)
			}
			out, _, err = s.applyBatch(reqs, hashes, shards, t, undos[:0])
		}
	}
	s.unlock(locks)
	if err != nil {
		return limit.Decision{}, err
	}
	return out, nil
}

// applyBatch decides every request at now under the held locks. When any
// refuses, or one fails, it takes back what the others charged. The
// merged decision is the most restrictive.
func (s *Store) applyBatch(reqs []limit.Request, hashes []uint64, shards []int, now int64, undos []undo) (limit.Decision, []undo, error) {
	var out limit.Decision
	allowed := true
	for i, r := range reqs {
		var u undo
		d, err := s.apply(&s.shards[shards[i]], hashes[i], r.Policy, now, r.Cost, &u)
		if err != nil {
			s.rollback(undos)
			return limit.Decision{}, undos, err
		}
		if u.sh != nil {
			undos = append(undos, u)
		}
		d.Policy, d.Index = r.Policy, i
		allowed = allowed && d.Allowed
		if i == 0 {
			out = d
		} else {
			out = limit.Merge(out, d)
		}
	}
	if !allowed {
		s.rollback(undos)
	}
	return out, undos, nil
}

// rollback takes back the changes of a refused batch, newest first, so
// that a key charged twice in one batch returns to its first state.
func (s *Store) rollback(undos []undo) {
	for i := len(undos) - 1; i >= 0; i-- {
		u := undos[i]
		switch {
		case u.log != nil:
			u.log.Rollback()
			if u.log.Len() == 0 {
				delete(u.sh.logs, u.h)
			}
		case u.existed:
			u.sh.states.restore(u.h, u.old)
		default:
			u.sh.states.remove(u.h)
		}
	}
}

func (s *Store) unlock(locks []int) {
	for _, i := range locks {
		s.shards[i].mu.Unlock()
	}
}
