package memory

import (
	"github.com/tollgate-dev/tollgate/limit"
)

// ErrFull (limit.ErrFull) is returned for a new key when its shard is
// full and every key sampled for eviction is being limited: evicting one
// would give a client held at its limit a fresh allowance, so the new key
// is not stored and its request is not decided. Stats.Full counts these.
// The rules engine refuses such a request whatever its failure mode
// (allowing it would let a flood of limited keys switch limiting off for
// every new client).
var ErrFull = limit.ErrFull

// A mark is what eviction knows of a key beyond its state, kept in the top
// byte of its slot (or beside its log): whether the key is being limited,
// and the shard's epoch at the key's latest decision, for least recently
// used order. A shard's epoch advances every epochLen new keys, so a
// key's age is counted in new keys, not in time: it wraps after 128
// epochs, four turnovers of a full shard, by which time an untouched key
// has almost surely been evicted; one that was not merely looks young
// once more.
type mark uint8

const (
	limitedMark mark = 0x80 // nothing left at the latest decision
	epochMask   mark = 0x7f
	// epochsPerShard is how many epochs a full shard's keys span.
	epochsPerShard = 32
)

// limited reports whether the key had nothing left at its latest decision.
func (m mark) limited() bool { return m&limitedMark != 0 }

// age is how many epochs ago the key was last decided, modulo 128.
func (m mark) age(epoch uint8) int { return int((mark(epoch) - m) & epochMask) }

// markFor is the mark of a key the shard just decided with d: limited
// when d refused or left nothing.
func (sh *shard) markFor(d limit.Decision) mark {
	m := mark(sh.epoch) & epochMask
	if !d.Allowed || d.Remaining <= 0 {
		m |= limitedMark
	}
	return m
}

const (
	// evictCandidates is how many evictable keys are compared.
	evictCandidates = 8
	// evictScan is how many keys are looked at, at most, to find them.
	evictScan = 64
)

// makeRoom makes a place in sh, if it is full, for the new key k (a table
// key, or a log's hash): it drops an idle key if it finds one among those
// it samples, and failing that evicts the least recently used of up to
// evictCandidates keys that are not being limited, looking at up to
// evictScan keys from k's home slot (a random place), and as many logs.
// When every key it looked at is being limited it evicts nothing and
// returns ErrFull. The shard's lock must be held.
func (s *Store) makeRoom(sh *shard, k uint64, now int64) error {
	if sh.added++; sh.added >= s.epochLen {
		sh.added = 0
		sh.epoch++
	}
	if sh.states.n+len(sh.logs) < s.perShard {
		return nil
	}
	sh.demote(now) // its state and mark go back to its slot
	t := &sh.states
	victim, oldest := -1, -1
	if len(t.slots) > 0 {
		i, seen, found := t.home(k), 0, 0
		for range len(t.slots) {
			if sl := &t.slots[i]; sl.h != 0 {
				if sl.st.IsIdle(now) {
					t.removeAt(i)
					s.expired.Add(1)
					return nil
				}
				if m := sl.mark(); !m.limited() {
					if a := m.age(sh.epoch); a > oldest {
						victim, oldest = i, a
					}
					found++
				}
				if seen++; found == evictCandidates || seen == evictScan {
					break
				}
			}
			i = t.next(i)
		}
	}
	var logVictim uint64
	logFound := false
	seen, found := 0, 0
	for h, e := range sh.logs {
		if e.log.IdleAt() <= now {
			delete(sh.logs, h)
			s.expired.Add(1)
			return nil
		}
		if !e.mark.limited() {
			if a := e.mark.age(sh.epoch); a > oldest {
				logVictim, oldest, logFound = h, a, true
			}
			found++
		}
		if seen++; found == evictCandidates || seen == evictScan {
			break
		}
	}
	switch {
	case logFound:
		delete(sh.logs, logVictim)
	case victim >= 0:
		t.removeAt(victim)
	default:
		s.full.Add(1)
		return ErrFull
	}
	s.evictions.Add(1)
	return nil
}
