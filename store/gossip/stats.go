package gossip

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// Stats are a node's gossip figures, for metrics. Counters are totals
// since New.
type Stats struct {
	// Alive counts the members, this node included, that are neither
	// suspect nor dead. Suspect counts the members this node suspects: its
	// probe of them went unanswered (memberlist's "Suspect ... has
	// failed" report) and it has had no ack from them since, nor declared
	// them dead. Dead counts the nodes that died or left in the last hour
	// and have not come back. A dead node's counters keep counting until
	// their windows end.
	Alive, Suspect, Dead int
	// Warm reports whether the node decides (see Store.Warm).
	Warm bool
	// Keys is the number of keys tracked, local and learned.
	Keys int
	// BytesSent and BytesReceived count the rounds' payload bytes
	// (before encryption).
	BytesSent, BytesReceived uint64
	// StateBytesSent and StateBytesReceived count the full states of
	// push/pulls.
	StateBytesSent, StateBytesReceived uint64
	// MessagesSent and MessagesReceived count gossip messages (a message
	// sent to n peers counts n times).
	MessagesSent, MessagesReceived uint64
	// PushPulls counts full state exchanges merged.
	PushPulls uint64
	// Evicted counts keys dropped before they were idle to make room for
	// new ones in a full key table (never a key being limited): raise
	// MaxKeys if it grows.
	Evicted uint64
	// Dropped counts the messages dropped, by reason.
	Dropped Dropped
	// MergeLag is, in the last round that sent anything, the age of the
	// oldest change it sent: how long an admission waited before it left
	// this node (the hottest keys go first; the rest wait when the round
	// is over its byte budget).
	MergeLag time.Duration
	// OldestUnsent is the age of the oldest change this node has not
	// sent yet (zero when none waits): the backlog of the rounds.
	OldestUnsent time.Duration
}

// Dropped counts received messages that were dropped, by reason. None of
// them changes a count.
type Dropped struct {
	// Malformed messages failed to decode.
	Malformed uint64
	// Absurd messages claimed a count beyond countFactor × the limit.
	Absurd uint64
	// Future messages held a window starting more than MaxSkew after the
	// receiver's now; it also counts the counters (not messages) that
	// named the receiver itself with a window after its current one (no
	// message moves a node's own counter on).
	Future uint64
	// Skew messages were stamped by a sender whose fleet time was more
	// than MaxSkew from the receiver's.
	Skew uint64
	// Unauthenticated packets and streams were not sealed with
	// Config.Key (or were sealed when there is none).
	Unauthenticated uint64
	// Mismatch counts keys (not messages) whose policy differs from this
	// node's: the nodes' configurations disagree.
	Mismatch uint64
	// Full counts keys (not messages) not learned because the key table
	// or the node table was full.
	Full uint64
	// Oversize counts streams (TCP) closed unread for announcing more
	// than Config.MaxStateBytes.
	Oversize uint64
	// Busy counts streams closed unread because the streams being read
	// held Config.StateBytesInFlight, or maxStreams (128) were open.
	Busy uint64
}

// Total is the sum of every reason's count.
func (d Dropped) Total() uint64 {
	return d.Malformed + d.Absurd + d.Future + d.Skew + d.Unauthenticated +
		d.Mismatch + d.Full + d.Oversize + d.Busy
}

type counters struct {
	bytesSent, bytesRecv      atomic.Uint64
	stateSent, stateRecv      atomic.Uint64
	msgsSent, msgsRecv        atomic.Uint64
	pushPulls                 atomic.Uint64
	malformed, absurd, future atomic.Uint64
	skew                      atomic.Uint64
	unauthenticated           atomic.Uint64
	mismatch, full            atomic.Uint64
	oversize, busy            atomic.Uint64
	mergeLag                  atomic.Int64
}

// Stats returns the node's figures now.
func (s *Store) Stats() Stats {
	st := Stats{
		Warm:               s.warm.Load(),
		BytesSent:          s.st.bytesSent.Load(),
		BytesReceived:      s.st.bytesRecv.Load(),
		StateBytesSent:     s.st.stateSent.Load(),
		StateBytesReceived: s.st.stateRecv.Load(),
		MessagesSent:       s.st.msgsSent.Load(),
		MessagesReceived:   s.st.msgsRecv.Load(),
		PushPulls:          s.st.pushPulls.Load(),
		Evicted:            s.evicted.Load(),
		MergeLag:           time.Duration(s.st.mergeLag.Load()),
		Dropped: Dropped{
			Malformed:       s.st.malformed.Load(),
			Absurd:          s.st.absurd.Load(),
			Future:          s.st.future.Load(),
			Skew:            s.st.skew.Load(),
			Unauthenticated: s.st.unauthenticated.Load(),
			Mismatch:        s.st.mismatch.Load(),
			Full:            s.st.full.Load(),
			Oversize:        s.st.oversize.Load(),
			Busy:            s.st.busy.Load(),
		},
	}
	if s.ml != nil {
		st.Suspect = s.members.suspects()
		st.Alive = max(s.ml.NumMembers()-st.Suspect, 1)
	}
	st.Dead = s.members.dead(time.Now())
	now := s.clock()
	for i := range s.shards {
		shd := &s.shards[i]
		shd.mu.Lock()
		st.Keys += len(shd.m)
		for _, e := range shd.dirty {
			for _, sl := range e.slots {
				if sl.since != 0 && sl.sends > 0 {
					st.OldestUnsent = max(st.OldestUnsent, time.Duration(now-sl.since))
				}
			}
		}
		shd.mu.Unlock()
	}
	return st
}

// memberTable follows the members and the nodes that died or left
// (memberlist's EventDelegate). It keeps copies: the nodes memberlist
// hands out are changed under its own lock, so reading them later would
// race.
type memberTable struct {
	// returned is called (outside the lock, on its own goroutine) with
	// the address of a node that comes back after memberlist declared it
	// dead: it missed the rounds in between.
	returned func(addr string)

	mu      sync.Mutex
	live    map[string]memberlist.Node // name → a copy
	gone    map[string]int64           // name → when it went (Unix ns, real clock)
	suspect map[string]bool            // members this node suspects
}

// suspected records that this node suspects the member named name.
func (t *memberTable) suspected(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.live[name]; ok {
		t.suspect[name] = true
	}
}

// acked records an answer from the member named name: not suspect.
func (t *memberTable) acked(name string) {
	t.mu.Lock()
	delete(t.suspect, name)
	t.mu.Unlock()
}

// suspects counts the members this node suspects.
func (t *memberTable) suspects() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.suspect)
}

func copyNode(n *memberlist.Node) memberlist.Node {
	return memberlist.Node{Name: n.Name, Addr: slices.Clone(n.Addr), Port: n.Port,
		PMin: n.PMin, PMax: n.PMax, PCur: n.PCur, DMin: n.DMin, DMax: n.DMax, DCur: n.DCur}
}

// NotifyJoin records a member, and forgets it among the gone.
func (t *memberTable) NotifyJoin(n *memberlist.Node) {
	c := copyNode(n)
	t.mu.Lock()
	t.live[n.Name] = c
	_, back := t.gone[n.Name]
	delete(t.gone, n.Name)
	delete(t.suspect, n.Name)
	t.mu.Unlock()
	if back && t.returned != nil {
		t.returned(c.Address())
	}
}

// NotifyLeave records a node that died or left.
func (t *memberTable) NotifyLeave(n *memberlist.Node) {
	t.mu.Lock()
	delete(t.live, n.Name)
	delete(t.suspect, n.Name)
	t.gone[n.Name] = time.Now().UnixNano()
	t.mu.Unlock()
}

// NotifyUpdate records a member's new address.
func (t *memberTable) NotifyUpdate(n *memberlist.Node) {
	c := copyNode(n)
	t.mu.Lock()
	if _, ok := t.live[n.Name]; ok {
		t.live[n.Name] = c
	}
	t.mu.Unlock()
}

// peers returns copies of the members but self.
func (t *memberTable) peers(self string) []*memberlist.Node {
	t.mu.Lock()
	defer t.mu.Unlock()
	ps := make([]*memberlist.Node, 0, len(t.live))
	for name, n := range t.live {
		if name != self {
			ps = append(ps, &n)
		}
	}
	return ps
}

// dead counts the nodes gone in the hour before now, forgetting older:
// each name once, and none that is a member again.
func (t *memberTable) dead(now time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for name, at := range t.gone {
		if now.UnixNano()-at > int64(time.Hour) {
			delete(t.gone, name)
		} else if _, back := t.live[name]; !back {
			n++
		}
	}
	return n
}

// pinger is the Store's memberlist.PingDelegate: an ack from a member
// ends this node's suspicion of it.
type pinger struct{ t *memberTable }

// AckPayload adds nothing to acks.
func (pinger) AckPayload() []byte { return nil }

// NotifyPingComplete clears the suspicion of the member that answered.
func (p pinger) NotifyPingComplete(other *memberlist.Node, _ time.Duration, _ []byte) {
	p.t.acked(other.Name)
}
