package gossip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// The wire format, version 2. Every integer is an unsigned varint unless
// said otherwise:
//
//	version    byte (2; version 1, without the stamp, is accepted too)
//	kind       byte (kindDelta or kindState)
//	length     uint32, big-endian: the bytes that follow (must be all of them)
//	stamp      the sender's fleet time when it encoded the message, Unix
//	           ns (see clock.go); 0 for none
//	nodes      count, then each name: length (1..maxNameLen) and bytes
//	entries    count, then each entry:
//	    key        length (1..MaxKeyLen) and bytes
//	    algorithm  byte (fixed_window, sliding_window or token_bucket)
//	    period     window or epoch length, ns (1..limit.MaxSpan)
//	    limit      the limit (or burst) (1..maxLimit)
//	    counters   count (1..nodes), then each: node index, window index,
//	               cur, prev, mcur, mprev
//
// A decoder accepts a message only whole: one bad field and nothing of it
// is merged.
const (
	wireVersion  = 1 // shared values' messages (values.go), and unstamped counters'
	deltaVersion = 2 // counters' messages, stamped
	kindDelta    = 1 // a round's changed counters
	kindState    = 2 // a full state, in a push/pull
	headerLen    = 6

	// MaxKeyLen is the longest key the wire carries, in bytes. Longer
	// keys are refused by Apply.
	MaxKeyLen = 4096
	// maxNameLen is the longest node name, in bytes.
	maxNameLen = 255
	// maxNodes bounds the node names of one message and the names a Store
	// tracks.
	maxNodes = 4096
	// maxLimit bounds a policy's limit on the wire.
	maxLimit = 1 << 40
	// countFactor bounds a counter: no node admits more than countFactor ×
	// limit in one window (one limit, or a burst and an epoch of refill,
	// plus overshoot).
	countFactor = 4
	// maxAhead is how far into the future a shared value's stamp may be
	// before the message is refused (values.go).
	maxAhead = time.Minute
	// MaxSkew is the largest difference between two nodes' clocks the
	// tier allows: a counter whose window starts more than MaxSkew after
	// the receiver's now cannot be a member's current window (it starts
	// before the member's now, at most MaxSkew ahead), and its message is
	// refused (Stats.Dropped.Future).
	MaxSkew = 30 * time.Second
)

// Reasons a received message is dropped, counted in Stats.Dropped.
var (
	errMalformed = errors.New("gossip: malformed message")
	errAbsurd    = errors.New("gossip: absurd count")
	errFuture    = errors.New("gossip: window in the future")
	errSkew      = errors.New("gossip: sender's clock beyond the allowed skew")
)

// wireEntry is one key of a decoded message; its counters are
// msg.counters[lo:hi].
type wireEntry struct {
	key    []byte
	shape  shape
	lo, hi int
}

// wireCounter is one node's counter in a decoded message.
type wireCounter struct {
	node int // index into msg.nodes
	c    counter
}

// message is a decoded message. Its byte slices point into the buffer it
// was decoded from.
type message struct {
	kind     byte
	stamp    int64 // the sender's fleet time at encoding, or 0 (version 1)
	nodes    [][]byte
	entries  []wireEntry
	counters []wireCounter
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint(lo, hi uint64) uint64 {
	if r.err != nil {
		return lo
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: truncated integer", errMalformed)
		return lo
	}
	r.b = r.b[n:]
	if v < lo || v > hi {
		r.err = fmt.Errorf("%w: %d outside [%d, %d]", errMalformed, v, lo, hi)
		return lo
	}
	return v
}

func (r *reader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if uint64(len(r.b)) < n {
		r.err = fmt.Errorf("%w: truncated string", errMalformed)
		return nil
	}
	b := r.b[:n]
	r.b = r.b[n:]
	return b
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.err = fmt.Errorf("%w: truncated", errMalformed)
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// decode parses and checks buf, received at now (Unix ns). It never
// panics; an error wraps errMalformed, errAbsurd, errFuture or errSkew.
func decode(buf []byte, now int64) (message, error) {
	var m message
	if len(buf) < headerLen {
		return m, fmt.Errorf("%w: %d bytes", errMalformed, len(buf))
	}
	if buf[0] != wireVersion && buf[0] != deltaVersion {
		return m, fmt.Errorf("%w: version %d", errMalformed, buf[0])
	}
	m.kind = buf[1]
	if m.kind != kindDelta && m.kind != kindState {
		return m, fmt.Errorf("%w: kind %d", errMalformed, m.kind)
	}
	if n := binary.BigEndian.Uint32(buf[2:headerLen]); uint64(n) != uint64(len(buf)-headerLen) {
		return m, fmt.Errorf("%w: length %d, have %d", errMalformed, n, len(buf)-headerLen)
	}
	r := reader{b: buf[headerLen:]}
	if buf[0] == deltaVersion {
		m.stamp = int64(r.uvarint(0, math.MaxInt64))
		if d := m.stamp - now; r.err == nil && m.stamp != 0 && (d > int64(MaxSkew) || d < -int64(MaxSkew)) {
			return m, fmt.Errorf("%w: %v from this node's", errSkew, time.Duration(d))
		}
	}
	// Every name takes at least 2 bytes and every entry at least 11, so
	// the counts are bounded by the bytes left before anything is
	// allocated.
	nn := r.uvarint(0, min(maxNodes, uint64(len(r.b)/2)))
	m.nodes = make([][]byte, 0, nn)
	for range nn {
		m.nodes = append(m.nodes, r.bytes(r.uvarint(1, maxNameLen)))
	}
	ne := r.uvarint(0, uint64(len(r.b)/11))
	if r.err == nil && ne > 0 && nn == 0 {
		return m, fmt.Errorf("%w: counters without nodes", errMalformed)
	}
	m.entries = make([]wireEntry, 0, ne)
	for range ne {
		var e wireEntry
		e.key = r.bytes(r.uvarint(1, MaxKeyLen))
		e.shape.alg = limit.Algorithm(r.byte())
		e.shape.period = int64(r.uvarint(1, uint64(limit.MaxSpan)))
		e.shape.limit = int64(r.uvarint(1, maxLimit))
		if r.err == nil && !gossipable(e.shape.alg) {
			return m, fmt.Errorf("%w: algorithm %v", errMalformed, e.shape.alg)
		}
		nc := r.uvarint(1, nn)
		e.lo = len(m.counters)
		bound := uint64(countFactor) * uint64(e.shape.limit)
		ahead := now + int64(MaxSkew)
		for range nc {
			var w wireCounter
			w.node = int(r.uvarint(0, nn-1))
			w.c.Win = int64(r.uvarint(0, 1<<62))
			cur, prev := r.uvarint(0, 1<<62), r.uvarint(0, 1<<62)
			mcur, mprev := r.uvarint(0, 1<<62), r.uvarint(0, 1<<62)
			if r.err != nil {
				return m, r.err
			}
			if cur > bound || prev > bound {
				return m, fmt.Errorf("%w: %d for a limit of %d", errAbsurd, max(cur, prev), e.shape.limit)
			}
			// A token bucket's register lies within two periods of its
			// window's start (the TAT is at most one period ahead).
			if mcur > 2*uint64(e.shape.period) || mprev > 2*uint64(e.shape.period) {
				return m, fmt.Errorf("%w: register %d for a period of %d", errAbsurd, max(mcur, mprev), e.shape.period)
			}
			if e.shape.alg != limit.AlgTokenBucket && (mcur != 0 || mprev != 0) {
				return m, fmt.Errorf("%w: register on %v", errMalformed, e.shape.alg)
			}
			if start := mulSat(w.c.Win, e.shape.period); start > ahead {
				return m, fmt.Errorf("%w: window starts %v ahead", errFuture, time.Duration(start-now))
			}
			w.c.Cur, w.c.Prev, w.c.MCur, w.c.MPrev = int64(cur), int64(prev), int64(mcur), int64(mprev)
			m.counters = append(m.counters, w)
		}
		e.hi = len(m.counters)
		if r.err != nil {
			return m, r.err
		}
		m.entries = append(m.entries, e)
	}
	if r.err != nil {
		return m, r.err
	}
	if len(r.b) != 0 {
		return m, fmt.Errorf("%w: %d trailing bytes", errMalformed, len(r.b))
	}
	return m, nil
}

// encoder builds messages of at most limit bytes. It is reused round
// after round and is not safe for concurrent use.
type encoder struct {
	limit int
	names []string       // the node table of the message being built
	index map[string]int // name → position in names
	table int            // encoded size of the node table
	body  []byte         // the encoded entries
	n     int            // entries in body
	out   []byte
}

func newEncoder(limit int) *encoder {
	return &encoder{limit: limit, index: make(map[string]int)}
}

func (e *encoder) reset() {
	e.names = e.names[:0]
	clear(e.index)
	e.table, e.body, e.n = 0, e.body[:0], 0
}

// size is the encoded size of the message so far.
func (e *encoder) size() int {
	return headerLen + binary.MaxVarintLen64 + uvarintLen(uint64(len(e.names))) + e.table + uvarintLen(uint64(e.n)) + len(e.body)
}

// empty reports whether the message holds no entry.
func (e *encoder) empty() bool { return e.n == 0 }

// add appends one key's counters, named by node; it reports false, adding
// nothing, when they would take the message over its limit (unless it is
// the message's first entry: one key always goes, however large).
func (e *encoder) add(key string, sh shape, names []string, cs []counter) bool {
	mark, table, nnames := len(e.body), e.table, len(e.names)
	e.body = binary.AppendUvarint(e.body, uint64(len(key)))
	e.body = append(e.body, key...)
	e.body = append(e.body, byte(sh.alg))
	e.body = binary.AppendUvarint(e.body, uint64(sh.period))
	e.body = binary.AppendUvarint(e.body, uint64(sh.limit))
	e.body = binary.AppendUvarint(e.body, uint64(len(cs)))
	for i, c := range cs {
		j, ok := e.index[names[i]]
		if !ok {
			j = len(e.names)
			e.names = append(e.names, names[i])
			e.index[names[i]] = j
			e.table += uvarintLen(uint64(len(names[i]))) + len(names[i])
		}
		e.body = binary.AppendUvarint(e.body, uint64(j))
		e.body = binary.AppendUvarint(e.body, uint64(c.Win))
		e.body = binary.AppendUvarint(e.body, uint64(c.Cur))
		e.body = binary.AppendUvarint(e.body, uint64(c.Prev))
		e.body = binary.AppendUvarint(e.body, uint64(c.MCur))
		e.body = binary.AppendUvarint(e.body, uint64(c.MPrev))
	}
	e.n++
	if e.n > 1 && e.size() > e.limit {
		e.n--
		e.body = e.body[:mark]
		for _, name := range e.names[nnames:] {
			delete(e.index, name)
		}
		e.names, e.table = e.names[:nnames], table
		return false
	}
	return true
}

// finish returns the message built, stamped with the sender's fleet time
// now, valid until the next call on e.
func (e *encoder) finish(kind byte, now int64) []byte {
	b := append(e.out[:0], deltaVersion, kind, 0, 0, 0, 0)
	b = binary.AppendUvarint(b, uint64(max(now, 0)))
	b = binary.AppendUvarint(b, uint64(len(e.names)))
	for _, name := range e.names {
		b = binary.AppendUvarint(b, uint64(len(name)))
		b = append(b, name...)
	}
	b = binary.AppendUvarint(b, uint64(e.n))
	b = append(b, e.body...)
	binary.BigEndian.PutUint32(b[2:headerLen], uint32(len(b)-headerLen))
	e.out = b
	return b
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
