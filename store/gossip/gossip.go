package gossip

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/hashicorp/memberlist"
)

// candidate is a dirty key waiting for a round.
type candidate struct {
	e    *entry
	shd  *shard
	heat int64
}

// round sends the counters changed since the last round to the round's
// peers, hottest keys first, in messages of at most MessageBytes and at
// most RoundBytes in all per peer; the keys left over stay dirty for the
// next round.
func (s *Store) round() {
	s.roundMu.Lock()
	defer s.roundMu.Unlock()
	s.updateRelayRounds()
	now := s.clock()
	var cands []candidate
	for i := range s.shards {
		shd := &s.shards[i]
		shd.mu.Lock()
		for _, e := range shd.dirty {
			if shd.m[e.key] != e {
				continue // dropped since: idle
			}
			cands = append(cands, candidate{e: e, shd: shd, heat: e.heat})
		}
		shd.dirty = shd.dirty[:0]
		shd.mu.Unlock()
	}
	if len(cands) == 0 {
		return
	}
	var peers []*memberlist.Node
	if s.ml != nil {
		if peers = s.peers(); len(peers) == 0 {
			s.redirty(cands)       // nobody to tell yet
			s.lastFresh.Store(now) // and no kick before the next tick either
			return
		}
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		switch {
		case a.heat > b.heat:
			return -1
		case a.heat < b.heat:
			return 1
		}
		return 0
	})
	enc := s.enc
	enc.reset()
	budget := s.cfg.RoundBytes
	var (
		names []string
		cs    []counter
		lag   int64
		fresh bool
	)
	for i, c := range cands {
		if budget <= 0 {
			s.redirty(cands[i:])
			break
		}
		names, cs = names[:0], cs[:0]
		c.shd.mu.Lock()
		e := c.e
		key, sh := e.key, e.sh
		more := false
		for j := range e.slots {
			sl := &e.slots[j]
			if sl.sends <= 0 {
				continue
			}
			names = append(names, s.nodes.name(sl.node))
			cs = append(cs, sl.c)
			if sl.since != 0 {
				lag = max(lag, now-sl.since)
				sl.since = 0
				fresh = true
			}
			sl.sends--
			more = more || sl.sends > 0
		}
		e.heat = 0
		e.dirty = false
		if more {
			c.shd.markDirty(e)
		}
		c.shd.mu.Unlock()
		if len(cs) == 0 {
			continue
		}
		if !enc.add(key, sh, names, cs) {
			budget -= s.send(peers, enc.finish(kindDelta, now))
			enc.reset()
			enc.add(key, sh, names, cs)
		}
	}
	if !enc.empty() {
		s.send(peers, enc.finish(kindDelta, now))
	}
	s.st.mergeLag.Store(lag)
	if fresh {
		s.lastFresh.Store(now)
	}
}

// updateRelayRounds sets the rounds a relayed counter is sent with a
// fan-out: memberlist's 4 × ⌈log10(members+1)⌉.
func (s *Store) updateRelayRounds() {
	if s.ml == nil {
		return // a Transport's node has no fan-out (Config.Validate)
	}
	s.relayRounds.Store(int32(4 * math.Ceil(math.Log10(float64(s.ml.NumMembers()+1)))))
}

// redirty puts candidates back on their shards' dirty lists.
func (s *Store) redirty(cands []candidate) {
	for _, c := range cands {
		c.shd.mu.Lock()
		c.e.dirty = false
		c.shd.markDirty(c.e)
		c.shd.mu.Unlock()
	}
}

// peers returns the members a round goes to: every other member, or
// Fanout of them at random.
func (s *Store) peers() []*memberlist.Node {
	ms := s.members.peers(s.name)
	if f := s.cfg.Fanout; f > 0 && f < len(ms) {
		rand.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
		ms = ms[:f]
	}
	return ms
}

// send sends msg to every peer and returns its size.
func (s *Store) send(peers []*memberlist.Node, msg []byte) int {
	if t := s.cfg.Transport; t != nil {
		t.Broadcast(msg)
		s.st.bytesSent.Add(uint64(len(msg)))
		s.st.msgsSent.Add(1)
		return len(msg)
	}
	for _, p := range peers {
		if s.ml.SendBestEffort(p, msg) == nil {
			s.st.bytesSent.Add(uint64(len(msg)))
			s.st.msgsSent.Add(1)
		}
	}
	return len(msg)
}

// receive decodes and merges a message; relay marks what was new to be
// sent on (epidemic gossip). It reports whether the message was merged.
func (s *Store) receive(buf []byte, relay bool) bool {
	m, err := decode(buf, s.clock())
	switch {
	case err == nil:
	case errors.Is(err, errAbsurd):
		s.st.absurd.Add(1)
		return false
	case errors.Is(err, errFuture):
		s.st.future.Add(1)
		return false
	case errors.Is(err, errSkew):
		s.st.skew.Add(1)
		return false
	default:
		s.st.malformed.Add(1)
		return false
	}
	s.hear(m.stamp)
	ids := make([]uint32, len(m.nodes))
	known := make([]bool, len(m.nodes))
	for i, n := range m.nodes {
		ids[i], known[i] = s.nodes.id(n)
	}
	now := s.clock()
	for _, we := range m.entries {
		s.mergeEntry(&m, we, func(i int) (uint32, bool) { return ids[i], known[i] }, now, relay)
	}
	return true
}

// mergeEntry merges one key's counters from m; node resolves the index
// of a name in m.nodes to this Store's id for it (false: no room for
// another node name).
func (s *Store) mergeEntry(m *message, we wireEntry, node func(int) (uint32, bool), now int64, relay bool) {
	shd := &s.shards[s.shardIndex(string(we.key))]
	shd.mu.Lock()
	defer shd.mu.Unlock()
	e := shd.m[string(we.key)]
	if e == nil {
		if e = s.newEntry(shd, string(we.key), we.shape, now); e == nil {
			s.st.full.Add(1)
			return
		}
	}
	if e.sh != we.shape {
		s.st.mismatch.Add(1)
		return
	}
	e.used = now
	for _, wc := range m.counters[we.lo:we.hi] {
		id, ok := node(wc.node)
		if !ok {
			s.st.full.Add(1)
			continue
		}
		if id == s.self {
			// This node's own counter is written by this node alone: a
			// copy naming a later window than its time's is a lie
			// (merged, it would move the counter on, and the node's
			// admissions would land where no view counts them), and once
			// warm every copy is an echo of what it sent. Before, a node
			// restarted under its name takes its counter back.
			if wc.c.Win > max(now, 0)/we.shape.period {
				s.st.future.Add(1)
				continue
			}
			if s.warm.Load() {
				continue
			}
		}
		sl := e.slot(id)
		nc := merge(sl.c, wc.c)
		if nc == sl.c {
			continue
		}
		if nc.Win == sl.c.Win {
			e.heat = addSat(e.heat, nc.Cur-sl.c.Cur)
		} else {
			e.heat = addSat(e.heat, nc.Cur)
		}
		sl.c = nc
		if relay && sl.node != s.self {
			sl.sends = s.retransmits()
			if sl.since == 0 {
				sl.since = now
			}
			shd.markDirty(e)
		}
	}
}

// state encodes every key's counters, for a push/pull.
func (s *Store) state() []byte {
	enc := newEncoder(math.MaxInt)
	var (
		names []string
		cs    []counter
	)
	for i := range s.shards {
		shd := &s.shards[i]
		shd.mu.Lock()
		for _, e := range shd.m {
			names, cs = names[:0], cs[:0]
			for _, sl := range e.slots {
				names = append(names, s.nodes.name(sl.node))
				cs = append(cs, sl.c)
			}
			if len(cs) > 0 {
				enc.add(e.key, e.sh, names, cs)
			}
		}
		shd.mu.Unlock()
	}
	return slices.Clone(enc.finish(kindState, s.clock()))
}

// delegate is the Store's memberlist.Delegate.
type delegate struct{ s *Store }

// NodeMeta returns no metadata.
func (delegate) NodeMeta(int) []byte { return nil }

// NotifyMsg merges a round's message from a peer.
func (d delegate) NotifyMsg(b []byte) {
	d.s.st.bytesRecv.Add(uint64(len(b)))
	d.s.st.msgsRecv.Add(1)
	if isValueMessage(b) {
		d.s.receiveValue(b)
		return
	}
	d.s.receive(b, d.s.cfg.Fanout > 0)
}

// GetBroadcasts returns nothing: rounds are sent by the Store's own loop.
func (delegate) GetBroadcasts(int, int) [][]byte { return nil }

// LocalState returns the full state for a push/pull; one over
// MaxStateBytes is logged, for the peers (configured alike) refuse it.
func (d delegate) LocalState(bool) []byte {
	b := d.s.state()
	d.s.st.stateSent.Add(uint64(len(b)))
	if len(b) > d.s.cfg.MaxStateBytes && d.s.logger != nil {
		d.s.logger.Printf("[WARN] gossip: full state over max_state_bytes: %d bytes, at most %d: peers refuse it; raise max_state_bytes", len(b), d.s.cfg.MaxStateBytes)
	}
	return b
}

// MergeRemoteState merges a peer's full state; the first one merged
// warms the node up.
func (d delegate) MergeRemoteState(b []byte, _ bool) {
	d.s.st.stateRecv.Add(uint64(len(b)))
	if d.s.receive(b, false) {
		d.s.st.pushPulls.Add(1)
		d.s.setWarm()
	}
}
