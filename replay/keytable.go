package replay

import (
	"bytes"
	"hash/maphash"
)

// inlineKey is the longest key a keyTable stores inline: every IPv4 key,
// every aggregated IPv6 prefix and most composites fit.
const inlineKey = 46

// keyTable maps keys to their ids. Short keys live inline in an
// open-addressing table (linear probing, at most half full), so that a
// lookup touches one slot instead of a map's control word, slot and
// separately allocated string, and the pipeline can load the slots of a
// batch of lines together before it looks their keys up. Longer
// keys go to a Go map.
type keyTable struct {
	slots []keySlot // power-of-two length
	n     int
	seed  maphash.Seed
	long  map[string]int32
	sink  uint16 // see slotLen
}

// keySlot is one table entry: 64 bytes, one cache line.
type keySlot struct {
	id   int32
	klen uint16 // 0: empty (keys are never empty)
	key  [inlineKey]byte
	_    [64 - 4 - 2 - inlineKey]byte
}

func newKeyTable() *keyTable {
	return &keyTable{slots: make([]keySlot, 1024), seed: maphash.MakeSeed(), long: make(map[string]int32)}
}

// hash returns key's hash for the lookup functions.
func (t *keyTable) hash(key []byte) uint64 { return maphash.Bytes(t.seed, key) }

// slotLen reads the slot the lookup of a key of hash h starts at: a load
// that brings the slot into the cache ahead of the lookup (the caller
// keeps the result in sink).
func (t *keyTable) slotLen(h uint64) uint16 {
	return t.slots[h&uint64(len(t.slots)-1)].klen
}

// get returns the id of key (whose hash is h) and whether it is present.
func (t *keyTable) get(key []byte, h uint64) (int32, bool) {
	if len(key) > inlineKey {
		id, ok := t.long[string(key)]
		return id, ok
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.klen == 0 {
			return 0, false
		}
		if int(s.klen) == len(key) && bytes.Equal(s.key[:s.klen], key) {
			return s.id, true
		}
	}
}

// put adds key (absent, hash h) with id.
func (t *keyTable) put(key []byte, h uint64, id int32) {
	if len(key) > inlineKey {
		t.long[string(key)] = id
		return
	}
	if 2*(t.n+1) > len(t.slots) {
		old := t.slots
		t.slots = make([]keySlot, 2*len(old))
		for i := range old {
			if old[i].klen > 0 {
				t.place(&old[i], t.hash(old[i].key[:old[i].klen]))
			}
		}
	}
	var s keySlot
	s.id, s.klen = id, uint16(len(key))
	copy(s.key[:], key)
	t.place(&s, h)
	t.n++
}

func (t *keyTable) place(s *keySlot, h uint64) {
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		if t.slots[i].klen == 0 {
			t.slots[i] = *s
			return
		}
	}
}

// del removes key (hash h), keeping every probe sequence intact by moving
// later entries of its cluster back (backward-shift deletion).
func (t *keyTable) del(key []byte, h uint64) {
	if len(key) > inlineKey {
		delete(t.long, string(key))
		return
	}
	mask := uint64(len(t.slots) - 1)
	i := h & mask
	for {
		s := &t.slots[i]
		if s.klen == 0 {
			return
		}
		if int(s.klen) == len(key) && bytes.Equal(s.key[:s.klen], key) {
			break
		}
		i = (i + 1) & mask
	}
	t.n--
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		s := &t.slots[j]
		if s.klen == 0 {
			break
		}
		home := t.hash(s.key[:s.klen]) & mask
		// Move s back to the hole at i if the hole lies on its probe path,
		// from home to j, cyclically.
		if (j-home)&mask >= (j-i)&mask {
			t.slots[i] = *s
			i = j
		}
	}
	t.slots[i] = keySlot{}
}
