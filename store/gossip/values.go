package gossip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Shared values: besides its counters, a node can publish small named
// values, fractions from 0 to 1 (an adaptive controller's factor, say),
// that every member keeps per publishing node. Each node owns its own
// entry for a name and stamps it with its clock; copies merge by the
// latest stamp (a last-writer-wins register per node and name, ties to
// the lower value), so the merge is a CRDT like the counters': a
// duplicated, reordered or late message changes nothing. A reader asks
// for the lowest value of the entries stamped after a time, so a node
// that stopped publishing drops out once its entry is stale.
//
// A value goes at once, in one message, to every member (whatever
// Fanout says: values are few and small), and is sent again by its next
// publication; a lost packet is repaired by that one. Values are not in
// push/pulls. With a Transport (a simulation) values stay on the node.
//
// The wire format (version 1, same header as the counters'):
//
//	version  byte (1)
//	kind     byte (kindValue)
//	length   uint32, big-endian: the bytes that follow
//	name     length (1..MaxValueNameLen) and bytes
//	node     length (1..maxNameLen) and bytes
//	at       Unix milliseconds of the publication, a varint
//	value    float64 bits, big-endian, in [0, 1]
//
// A message that fails to decode, claims a value outside [0, 1] or a
// stamp more than a minute ahead of the receiver's clock is dropped and
// counted (ValueStats.Dropped).

const (
	kindValue = 3 // one node's shared value

	// MaxValueNameLen is the longest name of a shared value, in bytes.
	MaxValueNameLen = 255
	// maxValues bounds the (name, node) entries a node keeps.
	maxValues = 4096
	// valueTTL is how long an entry is kept after its stamp.
	valueTTL = time.Hour
)

// ErrValueName reports a shared value's name that is empty or longer
// than MaxValueNameLen bytes; ErrValueRange a value outside [0, 1].
var (
	ErrValueName  = fmt.Errorf("gossip: shared value name of 1 to %d bytes wanted", MaxValueNameLen)
	ErrValueRange = errors.New("gossip: shared value outside [0, 1]")
)

// ValueStats are the shared values' figures. Counters are totals since
// New.
type ValueStats struct {
	// Entries is the number of (name, node) entries kept.
	Entries int
	// Sent and Received count value messages (one sent to n members
	// counts n times).
	Sent, Received uint64
	// Dropped counts received value messages dropped: malformed, out of
	// range, stamped in the future, or no room left in the table.
	Dropped uint64
}

// valueKey names one node's entry for a value.
type valueKey struct{ name, node string }

// valueEntry is one node's latest value for a name.
type valueEntry struct {
	at int64 // Unix ms, by the publisher's clock
	v  float64
}

// valueTable is a Store's shared values.
type valueTable struct {
	mu                      sync.Mutex
	m                       map[valueKey]valueEntry
	sent, received, dropped atomic.Uint64
}

// values returns s's table.
func (s *Store) values() *valueTable { return &s.vals }

// PublishValue records this node's value v (from 0 to 1) for name,
// stamped at, and sends it to every other member at once.
func (s *Store) PublishValue(name string, v float64, at time.Time) error {
	if name == "" || len(name) > MaxValueNameLen {
		return ErrValueName
	}
	if !(v >= 0 && v <= 1) { // NaN too
		return ErrValueRange
	}
	msg := encodeValue(name, s.name, at.UnixMilli(), v)
	t := s.values()
	t.merge(valueKey{name, s.name}, valueEntry{at: at.UnixMilli(), v: v}, at.UnixMilli())
	if s.ml == nil {
		return nil
	}
	for _, p := range s.members.peers(s.name) {
		if s.ml.SendBestEffort(p, msg) == nil {
			t.sent.Add(1)
		}
	}
	return nil
}

// LowestValue returns the lowest value any node (this one included)
// published for name stamped at since or later, and false when none
// was.
func (s *Store) LowestValue(name string, since time.Time) (float64, bool) {
	t := s.values()
	from := since.UnixMilli()
	low, ok := 0.0, false
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, e := range t.m {
		if k.name == name && e.at >= from && (!ok || e.v < low) {
			low, ok = e.v, true
		}
	}
	return low, ok
}

// ValueStats returns the shared values' figures now.
func (s *Store) ValueStats() ValueStats {
	t := s.values()
	t.mu.Lock()
	n := len(t.m)
	t.mu.Unlock()
	return ValueStats{Entries: n, Sent: t.sent.Load(), Received: t.received.Load(), Dropped: t.dropped.Load()}
}

// isValueMessage reports whether b claims to be a value message (it may
// still fail to decode).
func isValueMessage(b []byte) bool {
	return len(b) >= 2 && b[0] == wireVersion && b[1] == kindValue
}

// receiveValue decodes and merges a value message from a member.
func (s *Store) receiveValue(b []byte) {
	t := s.values()
	now := s.clock() / int64(time.Millisecond)
	name, node, at, v, err := decodeValue(b, now)
	if err != nil {
		t.dropped.Add(1)
		return
	}
	t.received.Add(1)
	if !t.merge(valueKey{string(name), string(node)}, valueEntry{at: at, v: v}, now) {
		t.dropped.Add(1)
	}
}

// merge keeps e for k when it is later than the entry known (ties: the
// lower value), dropping entries older than valueTTL when the table is
// full. It reports false when there is no room for k.
func (t *valueTable) merge(k valueKey, e valueEntry, now int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, known := t.m[k]
	if known {
		if e.at > old.at || (e.at == old.at && e.v < old.v) {
			t.m[k] = e
		}
		return true
	}
	if t.m == nil {
		t.m = make(map[valueKey]valueEntry)
	}
	if len(t.m) >= maxValues {
		for ok, oe := range t.m {
			if oe.at < now-valueTTL.Milliseconds() {
				delete(t.m, ok)
			}
		}
		if len(t.m) >= maxValues {
			return false
		}
	}
	t.m[k] = e
	return true
}

// encodeValue builds a value message.
func encodeValue(name, node string, at int64, v float64) []byte {
	b := make([]byte, headerLen, headerLen+2*binary.MaxVarintLen64+len(name)+len(node)+8)
	b[0], b[1] = wireVersion, kindValue
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	b = binary.AppendUvarint(b, uint64(len(node)))
	b = append(b, node...)
	b = binary.AppendUvarint(b, uint64(max(at, 0)))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(v))
	binary.BigEndian.PutUint32(b[2:headerLen], uint32(len(b)-headerLen))
	return b
}

// decodeValue parses and checks a value message received at now (Unix
// ms). It never panics; an error wraps errMalformed, errAbsurd (a value
// outside [0, 1]) or errFuture. name and node point into buf.
func decodeValue(buf []byte, now int64) (name, node []byte, at int64, v float64, err error) {
	if len(buf) < headerLen || !isValueMessage(buf) {
		return nil, nil, 0, 0, fmt.Errorf("%w: not a value message", errMalformed)
	}
	if n := binary.BigEndian.Uint32(buf[2:headerLen]); uint64(n) != uint64(len(buf)-headerLen) {
		return nil, nil, 0, 0, fmt.Errorf("%w: length %d, have %d", errMalformed, n, len(buf)-headerLen)
	}
	r := reader{b: buf[headerLen:]}
	name = r.bytes(r.uvarint(1, MaxValueNameLen))
	node = r.bytes(r.uvarint(1, maxNameLen))
	at = int64(r.uvarint(0, math.MaxInt64))
	bits := r.bytes(8)
	switch {
	case r.err != nil:
		return nil, nil, 0, 0, r.err
	case len(r.b) != 0:
		return nil, nil, 0, 0, fmt.Errorf("%w: %d trailing bytes", errMalformed, len(r.b))
	}
	v = math.Float64frombits(binary.BigEndian.Uint64(bits))
	if !(v >= 0 && v <= 1) {
		return nil, nil, 0, 0, fmt.Errorf("%w: value %v outside [0, 1]", errAbsurd, v)
	}
	if at > now+maxAhead.Milliseconds() {
		return nil, nil, 0, 0, fmt.Errorf("%w: stamped %dms ahead", errFuture, at-now)
	}
	return name, node, at, v, nil
}
