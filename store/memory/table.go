package memory

import "github.com/tollgate-dev/tollgate/limit"

// table is an open-addressing hash table from key hashes to fixed-size
// states, with linear probing and tombstone-free (backward-shift)
// deletion. It exists instead of a Go map to bound memory per key: slots
// are 32 bytes inline, the table grows by a quarter at 80% load, so it
// sits between 64% and 80% full (about 44 bytes a key), where a Go map
// doubles and averages about 70 bytes. A slot's first word holds the key
// (the low 56 bits of its hash, see tableKey) and, in its top byte, the
// key's eviction mark (see mark). Word 0 marks an empty slot, so keys are
// never 0. Not safe for concurrent use: the shard's mutex guards it.
type table struct {
	slots []slot
	n     int // occupied slots
}

type slot struct {
	h  uint64 // key | mark<<keyBits
	st limit.State
}

// keyBits is how many bits of a hash a slot keeps. The top byte it drops
// is the shard's number when there are 256 shards (the default) or more,
// so nothing is lost then.
const (
	keyBits = 56
	keyMask = 1<<keyBits - 1
)

// mark returns the slot's eviction mark.
func (s *slot) mark() mark { return mark(s.h >> keyBits) }

// setMark replaces the slot's eviction mark.
func (s *slot) setMark(m mark) { s.h = s.h&keyMask | uint64(m)<<keyBits }

const (
	minSlots = 8
	// Grow when n+1 > len·maxLoadNum/maxLoadDen.
	maxLoadNum, maxLoadDen = 4, 5
)

// tableKey is the key a slot keeps for hash h: its low 56 bits, with 0
// (an empty slot) mapped to 1.
func tableKey(h uint64) uint64 {
	if h &= keyMask; h == 0 {
		return 1
	}
	return h
}

// home is h's preferred slot: its low 32 bits scaled to the table (the
// top bits choose the shard, so they are the same for every key here).
func (t *table) home(h uint64) int {
	return int(uint64(uint32(h)) * uint64(len(t.slots)) >> 32)
}

func (t *table) next(i int) int {
	if i++; i == len(t.slots) {
		return 0
	}
	return i
}

// find returns the index of key h's slot, or -1.
func (t *table) find(h uint64) int {
	if len(t.slots) == 0 {
		return -1
	}
	for i := t.home(h); ; i = t.next(i) {
		switch w := t.slots[i].h; {
		case w&keyMask == h:
			return i
		case w == 0:
			return -1
		}
	}
}

// get returns h's state and whether it is present.
func (t *table) get(h uint64) (limit.State, bool) {
	if i := t.find(h); i >= 0 {
		return t.slots[i].st, true
	}
	return limit.State{}, false
}

// put stores st for h, with the eviction mark m, adding h if absent.
func (t *table) put(h uint64, st limit.State, m mark) {
	if i := t.find(h); i >= 0 {
		t.slots[i].st = st
		t.slots[i].setMark(m)
		return
	}
	t.add(slot{h | uint64(m)<<keyBits, st})
}

// restore stores st for h, keeping h's mark if it is present (a rolled
// back request leaves the mark its decision set).
func (t *table) restore(h uint64, st limit.State) {
	if i := t.find(h); i >= 0 {
		t.slots[i].st = st
		return
	}
	t.add(slot{h, st})
}

// add inserts a slot whose key is absent.
func (t *table) add(s slot) {
	if (t.n+1)*maxLoadDen > len(t.slots)*maxLoadNum {
		t.resize(max(minSlots, len(t.slots)+len(t.slots)/4))
	}
	t.insert(s)
	t.n++
}

func (t *table) insert(s slot) {
	i := t.home(s.h)
	for t.slots[i].h != 0 {
		i = t.next(i)
	}
	t.slots[i] = s
}

// remove deletes h if present.
func (t *table) remove(h uint64) {
	if i := t.find(h); i >= 0 {
		t.removeAt(i)
	}
}

// removeAt empties slot i and shifts back the entries of the probe run
// after it, so no tombstone is left.
func (t *table) removeAt(i int) {
	for j := t.next(i); t.slots[j].h != 0; j = t.next(j) {
		k := t.home(t.slots[j].h)
		// Move j into the hole at i unless its home lies cyclically in (i, j].
		if (i <= j && (k <= i || k > j)) || (i > j && k <= i && k > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = slot{}
	t.n--
}

func (t *table) resize(size int) {
	old := t.slots
	t.slots = make([]slot, size)
	for _, s := range old {
		if s.h != 0 {
			t.insert(s)
		}
	}
}

// shrink gives memory back after many deletions: below a quarter full, the
// table is rebuilt at the size that puts it at 64%.
func (t *table) shrink() {
	if len(t.slots) > minSlots && t.n*4 < len(t.slots) {
		t.resize(max(minSlots, t.n*maxLoadDen*5/(maxLoadNum*4)))
	}
}
