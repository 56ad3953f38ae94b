package gossip

import "time"

// The fleet's time (see the package doc, "Clock skew"): a node decides,
// counts and stamps its messages on its clock plus an offset from 0 to
// MaxSkew, which only grows, to the latest fleet time a message says.

// fleetNow is the fleet's time: this node's clock plus its offset.
func (s *Store) fleetNow() int64 { return s.raw() + s.offset.Load() }

// hear raises the offset to what a message stamped stamp (its sender's
// fleet time; 0 for none) says, within MaxSkew.
func (s *Store) hear(stamp int64) {
	if stamp == 0 {
		return
	}
	want := min(stamp-s.raw(), int64(MaxSkew))
	for {
		cur := s.offset.Load()
		if want <= cur || s.offset.CompareAndSwap(cur, want) {
			return
		}
	}
}

// Offset returns how far this node's fleet time is ahead of its clock
// (see the package doc, "Clock skew").
func (s *Store) Offset() time.Duration { return time.Duration(s.offset.Load()) }

// offsetClock returns clock shifted by d (testclock.go).
func offsetClock(clock func() int64, d time.Duration) func() int64 {
	return func() int64 { return clock() + int64(d) }
}
