package storeopen

import (
	"cmp"
	"slices"
	"time"

	"github.com/tollgate-dev/tollgate/store/eventual"
)

// EventualSync is the sync state of the eventual stores of one sync
// interval.
type EventualSync struct {
	Interval time.Duration
	eventual.Stats
}

// EventualSyncs returns the sync state of each eventual store made so far
// (one per sync interval in use), by interval. Empty when no eventual rule
// has decided yet.
func (t *Set) EventualSyncs() []EventualSync {
	t.mu.Lock()
	out := make([]EventualSync, 0, len(t.eventual))
	for iv, s := range t.eventual {
		out = append(out, EventualSync{Interval: iv, Stats: s.Stats()})
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b EventualSync) int { return cmp.Compare(a.Interval, b.Interval) })
	return out
}
