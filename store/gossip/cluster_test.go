package gossip

import (
	"context"
	"fmt"
	"math"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/tollgate-dev/tollgate/limit"
)

// eventually polls cond until it holds or the deadline passes: the nodes
// gossip over real sockets, so convergence takes real time. The deadline
// is generous for a loaded machine.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// used returns how much of p's limit node s sees used on key: a peek.
func used(t testing.TB, s *Store, key string, p limit.FixedWindow) int64 {
	t.Helper()
	d, err := s.Apply(context.Background(), key, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p.Limit - d.Remaining
}

// nodeOf returns a memberlist node to send to s directly.
func nodeOf(t testing.TB, s *Store) *memberlist.Node {
	host, port, err := net.SplitHostPort(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	return &memberlist.Node{Name: s.Name(), Addr: net.ParseIP(host), Port: uint16(p)}
}

// seen returns the count node s sees on a fixed window key, beyond the
// limit too (a peek stops at it).
func seen(s *Store, key string) int64 {
	shd := &s.shards[s.shardIndex(key)]
	shd.mu.Lock()
	defer shd.mu.Unlock()
	e := shd.m[key]
	if e == nil {
		return 0
	}
	w := s.clock() / e.sh.period
	v := e.viewWith(w, s.self, e.own(s.self), e.sh)
	return v.cur
}

// Three nodes, traffic spread over them: after convergence every node
// sees exactly what the fleet admitted; a node killed without leaving
// keeps counting until its window ends; a node that joins is warm, and
// up to date, from its join's state exchange.
func TestThreeNodes(t *testing.T) {
	clock := newFakeClock()
	a := newNode(t, "a", clock, nil)
	b := newNode(t, "b", clock, []string{a.Addr()})
	c := newNode(t, "c", clock, []string{a.Addr()})
	nodes := []*Store{a, b, c}
	for _, n := range nodes {
		if !n.Warm() {
			t.Fatalf("%s not warm after joining", n.Name())
		}
	}
	eventually(t, "three members", func() bool { return a.Stats().Alive == 3 && b.Stats().Alive == 3 && c.Stats().Alive == 3 })

	ctx := context.Background()
	p := limit.FixedWindow{Limit: 300, Window: time.Minute}
	const key = "three"
	admitted := [3]int64{}
	for i := range 240 {
		d, err := nodes[i%3].Apply(ctx, key, p, 1)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted[i%3]++
		}
	}
	total := admitted[0] + admitted[1] + admitted[2]
	if total != 240 {
		t.Fatalf("admitted %d of 240 under a limit of 300", total)
	}
	for _, n := range nodes {
		eventually(t, n.Name()+" to see the fleet's count", func() bool { return used(t, n, key, p) == total })
	}
	// Exhaust the limit: the fleet admits at most the limit plus what
	// one round of lag lets through, and then every node refuses.
	for i := range 300 {
		if d, _ := nodes[i%3].Apply(ctx, key, p, 1); d.Allowed {
			admitted[i%3]++
		}
	}
	total = admitted[0] + admitted[1] + admitted[2]
	for _, n := range nodes {
		eventually(t, n.Name()+" to see the fleet's count again", func() bool { return seen(n, key) == total })
	}
	// Sent at once, no round between: each node admits at most the room
	// it saw, 300 − 240, before it hears of the others.
	if total < 300 || total > 240+3*60 {
		t.Fatalf("the fleet admitted %d; want 300 to %d", total, 240+3*60)
	}
	t.Logf("admitted %d under a limit of 300 (%v)", total, admitted)

	// Kill c without leaving: a and b go on, still counting c's share.
	c.shutdown(false)
	for i := range 30 {
		if d, err := nodes[i%2].Apply(ctx, key, p, 1); err != nil || d.Allowed {
			t.Fatalf("after c died: %+v, %v", d, err)
		}
	}
	if got := seen(a, key); got != total {
		t.Fatalf("a sees %d used after c died, want %d (c's share still counting)", got, total)
	}

	eventually(t, "a to find c dead", func() bool { st := a.Stats(); return st.Dead == 1 && st.Alive == 2 })

	// A new node joins: warm and up to date at once, from its join.
	d := newNode(t, "d", clock, []string{b.Addr()})
	if !d.Warm() {
		t.Fatal("d not warm after joining")
	}
	if got := seen(d, key); got != total {
		t.Fatalf("d sees %d used right after joining, want %d", got, total)
	}
	if st := d.Stats(); st.PushPulls == 0 {
		t.Errorf("d merged no push/pull: %+v", st)
	}

	// c comes back under its name: it takes its own counter back, and
	// the fleet counts it once.
	c2 := newNode(t, "c", clock, []string{a.Addr()})
	if got := seen(c2, key); got != total {
		t.Fatalf("c back sees %d used, want %d", got, total)
	}

	// The window ends: every share, c's included, ages out.
	clock.advance(time.Minute)
	for _, n := range []*Store{a, b, d, c2} {
		if got := used(t, n, key, p); got != 0 {
			t.Errorf("%s sees %d used in the next window", n.Name(), got)
		}
	}
	t.Logf("a: %+v", a.Stats())
}

// Two halves of a fleet decide apart, then one joins the other: the views
// merge into the sum of what each admitted.
func TestAPartitionHealsWithoutDoubleCounting(t *testing.T) {
	clock := newFakeClock()
	a := newNode(t, "a", clock, nil)
	b := newNode(t, "b", clock, []string{a.Addr()})
	c := newNode(t, "c", clock, nil)
	ctx := context.Background()
	p := limit.FixedWindow{Limit: 100, Window: time.Minute}
	for range 40 {
		a.Apply(ctx, "k", p, 1)
		c.Apply(ctx, "k", p, 1)
	}
	for range 20 {
		b.Apply(ctx, "k", p, 1)
	}
	eventually(t, "b to see a", func() bool { return used(t, b, "k", p) == 60 })
	if got := used(t, c, "k", p); got != 40 {
		t.Fatalf("c sees %d alone, want 40", got)
	}
	// Heal: c joins a's side. Pushes and rounds repeat; nothing counts twice.
	if _, err := c.ml.Join([]string{a.Addr()}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*Store{a, b, c} {
		eventually(t, n.Name()+" to see the healed count", func() bool { return used(t, n, "k", p) == 100 })
	}
	time.Sleep(10 * c.cfg.Interval) // more rounds and retransmissions
	for _, n := range []*Store{a, b, c} {
		if got := used(t, n, "k", p); got != 100 {
			t.Errorf("%s sees %d after more rounds, want 100", n.Name(), got)
		}
	}
}

// The token bucket over three nodes: one request at a time, each after
// the fleet converged, admits exactly what a single bucket admits.
func TestTokenBucketAcrossNodesMatchesASingleBucket(t *testing.T) {
	clock := newFakeClock()
	a := newNode(t, "a", clock, nil)
	b := newNode(t, "b", clock, []string{a.Addr()})
	c := newNode(t, "c", clock, []string{a.Addr()})
	nodes := []*Store{a, b, c}
	eventually(t, "three members", func() bool { return a.Stats().Alive == 3 && b.Stats().Alive == 3 && c.Stats().Alive == 3 })
	p := limit.TokenBucket{Rate: limit.Per(10, time.Second), Burst: 4}
	var st limit.State
	ctx := context.Background()
	// Spread over more than two epochs (τ = 400ms).
	for i, gap := range []time.Duration{0, 0, 0, 0, 0, 50, 100, 100, 10, 300, 0, 0, 0, 0, 0, 0, 450, 90, 10, 250, 600, 0, 0, 0, 0, 0} {
		clock.advance(gap * time.Millisecond)
		now := clock.now()
		var want limit.Decision
		st, want = p.Decide(st, now, 1)
		n := nodes[i%3]
		got, err := n.Apply(ctx, "tb", p, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got.Allowed != want.Allowed || got.Remaining != want.Remaining || got.RetryAfter != want.RetryAfter {
			t.Fatalf("step %d on %s: got %+v, want %+v", i, n.Name(), got, want)
		}
		// Wait until every node's view equals the single bucket's.
		for _, m := range nodes {
			eventually(t, fmt.Sprintf("step %d: %s to converge", i, m.Name()), func() bool {
				d, _ := m.Apply(ctx, "tb", p, 0)
				_, w := p.Decide(st, now, 0)
				return d.Remaining == w.Remaining && d.ResetAfter == w.ResetAfter
			})
		}
	}
}

// With a secret key, a node without it (or with another) can neither
// join nor inject counts; the same message sealed with the key merges.
func TestANodeWithoutTheKeyCannotJoinOrInject(t *testing.T) {
	key := []byte("0123456789abcdef")
	withKey := func(k []byte) func(*Config) { return func(c *Config) { c.Key = k } }
	clock := newFakeClock()
	a := newNode(t, "a", clock, nil, withKey(key))
	b := newNode(t, "b", clock, []string{a.Addr()}, withKey(key))
	if !b.Warm() {
		t.Fatal("b with the key did not join")
	}
	x := newNode(t, "x", clock, []string{a.Addr()})
	y := newNode(t, "y", clock, []string{a.Addr()}, withKey([]byte("fedcba9876543210")))
	for _, n := range []*Store{x, y} {
		if n.Warm() || n.ml.NumMembers() != 1 {
			t.Errorf("%s joined without the key (%d members)", n.Name(), n.ml.NumMembers())
		}
	}
	if got := a.ml.NumMembers(); got != 2 {
		t.Errorf("a has %d members, want 2", got)
	}
	eventually(t, "a to count the refused joins", func() bool { return a.Stats().Dropped.Unauthenticated > 0 })

	p := limit.FixedWindow{Limit: 100, Window: time.Minute}
	w := clock.now() / int64(time.Minute)
	// Counters in b's name: a takes none in its own (see mergeEntry).
	enc := newEncoder(math.MaxInt)
	enc.add("k", shape{alg: limit.AlgFixedWindow, period: int64(time.Minute), limit: 100}, []string{"b"}, []counter{{Win: w, Cur: 50}})
	msg := enc.finish(kindDelta, clock.now())
	target := nodeOf(t, a)
	before := a.Stats().Dropped.Unauthenticated
	for _, n := range []*Store{x, y} {
		if err := n.ml.SendBestEffort(target, msg); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "a to drop the injected packets", func() bool { return a.Stats().Dropped.Unauthenticated >= before+2 })
	if got := used(t, a, "k", p); got != 0 {
		t.Fatalf("a counts %d injected without the key", got)
	}
	// The same packet from b, which holds the key, is merged.
	if err := b.ml.SendBestEffort(target, msg); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a to merge b's packet", func() bool { return used(t, a, "k", p) == 50 })
}

// A message that fails to decode or claims absurd counts is dropped and
// counted, and changes nothing.
func TestBadMessagesAreDroppedAndCounted(t *testing.T) {
	clock := newFakeClock()
	a := newNode(t, "a", clock, nil)
	b := newNode(t, "b", clock, []string{a.Addr()})
	target := nodeOf(t, a)
	w := clock.now() / int64(time.Minute)
	sh := shape{alg: limit.AlgFixedWindow, period: int64(time.Minute), limit: 100}
	for _, m := range [][]byte{
		{1, 2, 3},
		encodeOne("k", sh, counter{Win: w, Cur: 1000}),
		encodeOne("k", sh, counter{Win: w + 10, Cur: 1}),
	} {
		if err := b.ml.SendBestEffort(target, m); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "three drops", func() bool {
		d := a.Stats().Dropped
		return d.Malformed == 1 && d.Absurd == 1 && d.Future == 1
	})
	if got := used(t, a, "k", limit.FixedWindow{Limit: 100, Window: time.Minute}); got != 0 {
		t.Errorf("a counts %d from dropped messages", got)
	}
}

// A node that memberlist declared dead and that comes back missed the
// rounds in between: the nodes exchange full state at once, without
// waiting for a change or the periodic push/pull.
func TestAReturningNodeIsResynced(t *testing.T) {
	clock := newFakeClock()
	slow := func(c *Config) { c.PushPullInterval = time.Hour }
	a := newNode(t, "a", clock, nil, slow)
	b := newNode(t, "b", clock, []string{a.Addr()}, slow)
	newNode(t, "c", clock, []string{a.Addr()}, slow) // so that a's rounds go somewhere
	eventually(t, "a to list b and c", func() bool { return len(a.members.peers("a")) == 2 })
	p := limit.FixedWindow{Limit: 100, Window: time.Minute}
	// As if a had declared b dead: a's rounds skip b.
	var bn *memberlist.Node
	for _, n := range a.members.peers("a") {
		if n.Name == "b" {
			bn = n
		}
	}
	a.members.NotifyLeave(bn)
	a.Apply(context.Background(), "k", p, 7)
	time.Sleep(10 * a.cfg.Interval) // rounds (and the change's retransmissions) pass b by
	if got := seen(b, "k"); got != 0 {
		t.Fatalf("b saw %d while a counted it dead", got)
	}
	a.members.NotifyJoin(bn) // b is back
	eventually(t, "b to be resynced", func() bool { return seen(b, "k") == 7 })
}

// A member that stops answering is suspect (on the nodes whose probes it
// missed), then dead, and no longer suspect; a restarted one that answers
// again is neither. Also holds memberlist to the report it gives of a
// failed probe, the only sign of suspicion it gives.
func TestSuspectMembersAreCounted(t *testing.T) {
	clock := newFakeClock()
	a := newNode(t, "a", clock, nil)
	b := newNode(t, "b", clock, []string{a.Addr()})
	c := newNode(t, "c", clock, []string{a.Addr()})
	eventually(t, "three members", func() bool { return a.Stats().Alive == 3 && b.Stats().Alive == 3 })
	c.shutdown(false)
	eventually(t, "a or b to suspect c", func() bool {
		sa, sb := a.Stats(), b.Stats()
		return sa.Suspect == 1 && sa.Alive == 2 || sb.Suspect == 1 && sb.Alive == 2
	})
	eventually(t, "a and b to find c dead", func() bool {
		sa, sb := a.Stats(), b.Stats()
		return sa.Dead == 1 && sa.Suspect == 0 && sa.Alive == 2 && sb.Dead == 1 && sb.Suspect == 0 && sb.Alive == 2
	})
}

// Deltas only: once its changes are sent, a quiet key costs nothing. A
// thousand keys changed once are sent (Retransmit times), then the rounds
// go silent; one hot key changing every round then costs a message of
// its own size per round, not the thousand quiet keys'.
func TestAQuietKeyCostsNothing(t *testing.T) {
	clock := newFakeClock()
	a := newNode(t, "a", clock, nil)
	b := newNode(t, "b", clock, []string{a.Addr()})
	eventually(t, "two members", func() bool { return a.Stats().Alive == 2 && b.Stats().Alive == 2 })
	p := limit.FixedWindow{Limit: 1 << 20, Window: time.Hour}
	ctx := context.Background()
	for i := range 1000 {
		if _, err := a.Apply(ctx, fmt.Sprintf("quiet-%d", i), p, 1); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "b to learn the thousand keys", func() bool { return b.Stats().Keys == 1000 })
	eventually(t, "a to send the last retransmission", func() bool {
		before := a.Stats().BytesSent
		time.Sleep(5 * 20 * time.Millisecond) // five rounds
		return a.Stats().BytesSent == before
	})
	oneRound := a.Stats().BytesSent / DefaultRetransmit // the thousand keys, once
	before := a.Stats().BytesSent
	time.Sleep(10 * 20 * time.Millisecond)
	if got := a.Stats().BytesSent - before; got != 0 {
		t.Fatalf("ten quiet rounds sent %d bytes, want 0", got)
	}
	before = a.Stats().BytesSent
	rounds := 0
	for start := time.Now(); time.Since(start) < 10*20*time.Millisecond; rounds++ {
		if _, err := a.Apply(ctx, "hot", p, 1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	hot := a.Stats().BytesSent - before
	// Each round carries the hot key alone: a small message, a few
	// rounds more for its retransmissions.
	if hot == 0 || hot > uint64(rounds+DefaultRetransmit+2)*64 {
		t.Fatalf("%d rounds of one hot key among 1000 quiet ones sent %d bytes (the thousand once: %d)", rounds, hot, oneRound)
	}
	t.Logf("the thousand keys once: %d bytes; %d rounds of the hot key alone: %d bytes", oneRound, rounds, hot)
}

// A node restarted under its name at another address (a new port: a
// rescheduled container) is taken back once its old incarnation is dead,
// and counted once, by its current state: alive, not dead (issue 23: the
// others went on counting the old incarnation dead, and memberlist
// refused the new one for ever as a conflicting address).
func TestARestartedNodeIsCountedOnceByItsCurrentState(t *testing.T) {
	clock := newFakeClock()
	often := func(c *Config) { c.PushPullInterval = 200 * time.Millisecond }
	a := newNode(t, "a", clock, nil, often)
	b := newNode(t, "b", clock, []string{a.Addr()}, often)
	c := newNode(t, "c", clock, []string{a.Addr()}, often)
	eventually(t, "three members", func() bool { return a.Stats().Alive == 3 && b.Stats().Alive == 3 })
	c.shutdown(false)
	eventually(t, "a and b to find c dead", func() bool { return a.Stats().Dead == 1 && b.Stats().Dead == 1 })
	c2 := newNode(t, "c", clock, []string{a.Addr()}, often) // BindPort 0: another port
	if c2.Addr() == c.Addr() {
		t.Fatalf("c restarted at its old address %s", c.Addr())
	}
	eventually(t, "every node to count c alive, once", func() bool {
		for _, n := range []*Store{a, b, c2} {
			if st := n.Stats(); st.Alive != 3 || st.Dead != 0 || st.Suspect != 0 {
				return false
			}
		}
		return true
	})
}
