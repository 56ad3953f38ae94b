package gossip

import "errors"

// Transport carries a Store's rounds in place of memberlist (see
// Config.Transport): a simulator's virtual network. The Store keeps
// everything else: its counters, its decisions (Apply), what a round
// sends (Round: the changed counters, hottest first, under the byte
// caps, Retransmit rounds each) and how a received counter is merged
// (MergeDelta, the same code memberlist's deliveries run).
type Transport interface {
	// Broadcast sends one message of a round to every other member. msg
	// is only valid during the call: the Store reuses its buffer.
	Broadcast(msg []byte)
}

// detached finishes New for a Store with a Transport: no memberlist, no
// background loop, warm at once (there is no fleet state to wait for).
func (s *Store) detached() *Store {
	s.name = s.cfg.Name
	s.self, _ = s.nodes.id([]byte(s.name))
	s.setWarm()
	close(s.done)
	return s
}

// Round runs one gossip round now: the counters changed since the last
// one go to the round's peers. The background loop calls it every
// Interval; the owner of a Store with a Transport calls it instead, on
// its own (virtual) clock.
func (s *Store) Round() { s.round() }

// Sweep drops the keys whose every counter has aged out of its windows.
// The background loop calls it every second; the owner of a Store with a
// Transport calls it instead.
func (s *Store) Sweep() { s.sweep(s.clock()) }

// Delta is one decoded gossip message (a round's changed counters, or a
// full state): its keys, each with the counters of the nodes that sent
// them. It is the unit a Transport's owner delivers, key by key, with
// MergeDelta; decoding once serves every recipient.
type Delta struct {
	buf []byte
	m   message
}

// ErrMalformed, ErrAbsurd, ErrFuture and ErrSkew are the reasons
// DecodeDelta refuses a message, as Stats.Dropped counts them.
var (
	ErrMalformed = errMalformed
	ErrAbsurd    = errAbsurd
	ErrFuture    = errFuture
	ErrSkew      = errSkew
)

// DecodeDelta decodes a message as a Store receiving it at now (Unix ns,
// its fleet time: see Store.Now) would, whole or not at all (an error
// wrapping ErrMalformed, ErrAbsurd, ErrFuture or ErrSkew). It copies msg.
func DecodeDelta(msg []byte, now int64) (*Delta, error) {
	d := &Delta{buf: append([]byte(nil), msg...)}
	m, err := decode(d.buf, now)
	if err != nil {
		return nil, err
	}
	d.m = m
	return d, nil
}

// Len returns the number of keys in d.
func (d *Delta) Len() int { return len(d.m.entries) }

// Key returns the i-th key of d. The string is d's own: it allocates.
func (d *Delta) Key(i int) string { return string(d.m.entries[i].key) }

// Size returns d's size on the wire, in bytes.
func (d *Delta) Size() int { return len(d.buf) }

// errDeltaIndex reports an index beyond a Delta's keys.
var errDeltaIndex = errors.New("gossip: delta key index out of range")

// MergeDelta merges the counters of d's i-th key into s, as the receipt
// of the message would (the CRDT merge: a counter already known changes
// nothing, so a delta merged twice or late never counts twice).
func (s *Store) MergeDelta(d *Delta, i int) error {
	if i < 0 || i >= len(d.m.entries) {
		return errDeltaIndex
	}
	s.hear(d.m.stamp)
	s.mergeEntry(&d.m, d.m.entries[i], func(j int) (uint32, bool) { return s.nodes.id(d.m.nodes[j]) }, s.clock(), false)
	return nil
}

// Now returns the node's fleet time, Unix ns: its clock plus the offset
// the fleet's stamps raised it by (clock.go). Its windows are on this
// time; decode what it receives at it.
func (s *Store) Now() int64 { return s.clock() }

// Kicked reports whether a change asked for a round at once (a change
// after a quiet interval, see nudge), and clears the request: the
// background loop runs that round itself; the owner of a Store with a
// Transport calls Round when Kicked says so.
func (s *Store) Kicked() bool {
	select {
	case <-s.kick:
		s.kicked.Store(false)
		return true
	default:
		return false
	}
}
