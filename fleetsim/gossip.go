package fleetsim

import (
	"context"
	"fmt"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/gossip"
	"github.com/tollgate-dev/tollgate/store/gossip/gossipconf"
)

// gossipSim is the gossip tier: each node is a store/gossip whose
// Transport is the simulated network. The fleet calls each node's Round
// every Interval (at the node's phase); what a round broadcasts is
// decoded once (gossip.DecodeDelta) and filed by key, and a node merges
// the deltas of a key (gossip.MergeDelta, the code memberlist's
// deliveries run) that have reached it, Latency after they were sent and
// unless lost, when it next decides on that key. Merging late changes
// no decision, since nothing but a decision reads the merged view and
// the merge is a CRDT (idempotent, commutative, associative); it spares
// a thousand nodes the keys they never decide on, which is what makes a
// thousand-node fleet simulable on one core.
type gossipSim struct {
	f       *Fleet
	p       limit.Policy
	nodes   []*gossip.Store
	horizon int64 // how long a sent delta can still change a decision (ns)

	logs    []*sendLog       // by key id
	cursors map[uint64]int64 // node<<32 | key id: next log sequence to merge
	sentNow bool             // the round in progress broadcast something
	sends   int64            // log entries filed, for the losses

	msgs, bytes int64
	rounds      []int // per node, for the sweeps
	dropped     int64 // deltas that failed to decode (none expected)
}

// sendLog is the deltas sent about one key, in the order sent.
type sendLog struct {
	base int64 // sequence number of ents[0]
	ents []sent
}

type sent struct {
	at   int64 // sent, Unix ns
	from int32
	i    int32 // index of the key in d
	d    *gossip.Delta
	seq  uint64 // for the loss draw
}

// nodeTransport is one node's end of the simulated network.
type nodeTransport struct {
	s    *gossipSim
	node int
}

func (t nodeTransport) Broadcast(msg []byte) { t.s.broadcast(t.node, msg) }

func newGossip(f *Fleet) (*gossipSim, error) {
	if err := gossip.CheckPolicy(f.cfg.Policy); err != nil {
		return nil, err
	}
	s := &gossipSim{f: f, p: f.cfg.Policy, cursors: make(map[uint64]int64), rounds: make([]int, f.cfg.Nodes)}
	// A counter counts in its window and the next (the view reads the
	// current and the previous window), so a delta older than two
	// periods changes no view.
	s.horizon = 2*int64(f.cfg.Policy.Quota().Window) + int64(f.cfg.Latency)
	for i := range f.cfg.Nodes {
		n, err := gossip.New(gossip.Config{Config: gossipconf.Config{Name: fmt.Sprintf("node-%d", i), Interval: f.cfg.Interval, MaxKeys: 1 << 20}, Clock: f.clock, Transport: nodeTransport{s, i}})
		if err != nil {
			return nil, err
		}
		s.nodes = append(s.nodes, n)
	}
	return s, nil
}

// broadcast files a round's message: every other node is sent it.
func (s *gossipSim) broadcast(from int, msg []byte) {
	s.sentNow = true
	peers := int64(len(s.nodes) - 1)
	s.msgs += peers
	s.bytes += int64(len(msg)) * peers
	now := s.f.now
	d, err := gossip.DecodeDelta(msg, now)
	if err != nil {
		s.dropped++
		return
	}
	for i := range d.Len() {
		k, ok := s.f.keys.id(d.Key(i))
		if !ok {
			continue // a key no request named: cannot happen
		}
		for int(k) >= len(s.logs) {
			s.logs = append(s.logs, nil)
		}
		lg := s.logs[k]
		if lg == nil {
			lg = &sendLog{}
			s.logs[k] = lg
		}
		lg.trim(now - s.horizon)
		s.sends++
		lg.ents = append(lg.ents, sent{at: now, from: int32(from), i: int32(i), d: d, seq: uint64(s.sends)})
	}
}

// trim drops the deltas sent before cut.
func (lg *sendLog) trim(cut int64) {
	n := 0
	for n < len(lg.ents) && lg.ents[n].at < cut {
		n++
	}
	if n == 0 {
		return
	}
	clear(lg.ents[:n])
	lg.ents = lg.ents[n:]
	lg.base += int64(n)
	if cap(lg.ents) > 64 && len(lg.ents) < cap(lg.ents)/4 {
		lg.ents = append([]sent(nil), lg.ents...)
	}
}

// deliver merges into node the deltas about key k that have reached it
// by now and that it has not merged yet.
func (s *gossipSim) deliver(node int, k int32) {
	if int(k) >= len(s.logs) || s.logs[k] == nil {
		return
	}
	lg := s.logs[k]
	ck := uint64(node)<<32 | uint64(uint32(k))
	seq := max(s.cursors[ck], lg.base)
	arrived := s.f.now - int64(s.f.cfg.Latency)
	loss := s.f.cfg.Loss
	n := s.nodes[node]
	for ; seq < lg.base+int64(len(lg.ents)); seq++ {
		e := &lg.ents[seq-lg.base]
		if e.at > arrived {
			break
		}
		if int(e.from) == node || (loss > 0 && lossDraw(s.f.cfg.Seed, e.seq, uint64(node)+1) < loss) {
			continue
		}
		n.MergeDelta(e.d, int(e.i))
	}
	s.cursors[ck] = seq
}

func (s *gossipSim) decide(node int, k int32, key string, cost int64) (bool, bool, error) {
	s.deliver(node, k)
	n := s.nodes[node]
	d, err := n.Apply(context.Background(), key, s.p, cost)
	if n.Kicked() {
		// A change after a quiet interval: the tier rounds at once.
		n.Round()
	}
	return d.Allowed, d.Allowed && cost > 0, err
}

// tick runs the node's round; it keeps rounding while rounds send
// something (a changed counter is sent in several rounds).
func (s *gossipSim) tick(node int) bool {
	s.sentNow = false
	s.nodes[node].Round()
	s.rounds[node]++
	if s.rounds[node]%10 == 0 {
		s.nodes[node].Sweep()
	}
	return s.sentNow
}

func (s *gossipSim) traffic() (int64, int64, bool) { return s.msgs, s.bytes, false }

func (s *gossipSim) close() {
	for _, n := range s.nodes {
		n.Close()
	}
}
