package replay

import (
	"cmp"
	"slices"
	"strings"

	"github.com/tollgate-dev/tollgate/limit"
)

// keyEntry is one key record's figures as the report reads them: a live
// key's, or a retired one's.
type keyEntry struct {
	stat   keyStat
	outs   []keyOutcome // per run
	serial int64        // the record's serial number, unique per stretch
	live   bool         // the record is still held (not retired)
}

// entry returns key k's figures.
func (s *simulator) entry(k int32) keyEntry {
	e, _ := s.entryInto(k, make([]keyOutcome, len(s.runs)))
	return e
}

// entryInto is entry with its outcomes in the first len(s.runs) elements
// of buf; it returns the rest of buf.
func (s *simulator) entryInto(k int32, buf []keyOutcome) (keyEntry, []keyOutcome) {
	n := len(s.runs)
	e := keyEntry{stat: s.stat(k), outs: buf[:n:n], serial: s.slab[int(k)*s.stride+wSerial]}
	for i := range e.outs {
		e.outs[i] = s.outcome(k, i)
	}
	return e, buf[n:]
}

// byRequests orders entries busiest first, then by key.
func byRequests(a, b keyEntry) int {
	if c := cmp.Compare(b.stat.requests, a.stat.requests); c != 0 {
		return c
	}
	return cmp.Or(strings.Compare(a.stat.name, b.stat.name), cmp.Compare(a.serial, b.serial))
}

// byRefused returns the order of most refusals under run i first.
func byRefused(i int) func(a, b keyEntry) int {
	return func(a, b keyEntry) int {
		if c := cmp.Compare(b.outs[i].refused, a.outs[i].refused); c != 0 {
			return c
		}
		return cmp.Or(strings.Compare(a.stat.name, b.stat.name), cmp.Compare(a.serial, b.serial))
	}
}

// retiredStats is what retired key records leave behind: exact counts and
// distributions, and bounded top lists.
type retiredStats struct {
	keys             int64 // records retired
	first, last      int64
	peakSec, peakMin counted // value -> records
	need             []counted
	affected         []int64 // per run: retired records with a refusal
	top              int
	busiest          []keyEntry   // the top most requests, sorted
	topRefused       [][]keyEntry // per run: the top most refused, sorted
}

func newRetiredStats(runs, top int) *retiredStats {
	r := &retiredStats{peakSec: counted{}, peakMin: counted{}, top: max(top, 1),
		need: make([]counted, runs), affected: make([]int64, runs), topRefused: make([][]keyEntry, runs)}
	for i := range r.need {
		r.need[i] = counted{}
	}
	return r
}

// keepTop inserts e into the sorted list if it ranks among the first n.
func keepTop(list []keyEntry, e keyEntry, n int, order func(a, b keyEntry) int) []keyEntry {
	i, _ := slices.BinarySearchFunc(list, e, order)
	if i >= n {
		return list
	}
	list = slices.Insert(list, i, e)
	return list[:min(len(list), n)]
}

func (r *retiredStats) fold(e keyEntry) {
	if r.keys == 0 || e.stat.first < r.first {
		r.first = e.stat.first
	}
	r.last = max(r.last, e.stat.last)
	r.keys++
	r.peakSec[e.stat.peakSec]++
	r.peakMin[e.stat.peakMin]++
	r.busiest = keepTop(r.busiest, e, r.top, byRequests)
	for i, o := range e.outs {
		r.need[i][o.need]++
		if o.refused > 0 {
			r.affected[i]++
			r.topRefused[i] = keepTop(r.topRefused[i], e, r.top, byRefused(i))
		}
	}
}

// idle reports whether key k's every algorithm state is equivalent to an
// absent key at now, no request of it is queued, and its seam trackers
// hold nothing that a later request could still count.
func (s *simulator) idle(k int32) bool {
	w := s.slab[int(k)*s.stride : (int(k)+1)*s.stride]
	if w[wPending] != 0 {
		return false
	}
	for j := range s.nStateful {
		if w[statWords+3*j+2] > s.now { // State.Idle
			return false
		}
	}
	for j := range s.nLogged {
		if l := &s.logs[int(k)*s.nLogged+j]; l.Len() > 0 && l.IdleAt() > s.now {
			return false
		}
	}
	for _, r := range s.runs {
		if r.seamIdx >= 0 {
			if q := &s.seams[int(k)*s.nSeam+r.seamIdx]; len(q.ents) > q.off && q.ents[len(q.ents)-1].at > s.now-r.seamWindow {
				return false
			}
		}
	}
	return true
}

// retire folds idle keys, quietest first, until a quarter of MaxKeys is
// free. If too few are idle, it waits for another quarter of MaxKeys of
// new keys before trying again, so memory follows the live keys without
// a pass per new key.
func (s *simulator) retire() {
	target := s.maxKeys * 3 / 4
	var cand []int32
	for k := range s.names {
		id := int32(k)
		if s.names[k] == "" || (s.tracks != nil && s.tracks[id] != nil) || !s.idle(id) {
			continue
		}
		cand = append(cand, id)
	}
	slices.SortFunc(cand, func(a, b int32) int {
		return cmp.Compare(s.slab[int(a)*s.stride+wLast], s.slab[int(b)*s.stride+wLast])
	})
	for _, id := range cand {
		if s.live <= target {
			break
		}
		s.retired.fold(s.entry(id))
		s.index.del([]byte(s.names[id]), s.index.hash([]byte(s.names[id])))
		s.names[id] = ""
		for j := range s.nLogged {
			s.logs[int(id)*s.nLogged+j] = limit.Log{}
		}
		for j := range s.nSeam {
			s.seams[int(id)*s.nSeam+j] = seamQueue{}
		}
		s.free = append(s.free, id)
		s.live--
	}
	s.retireAt = max(s.live+max(s.maxKeys/4, 1), s.maxKeys)
}
