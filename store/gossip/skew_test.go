package gossip

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/gossip/gossipconf"
)

// wire is a Transport that hands each broadcast message at once to the
// other nodes of a simulated fleet, decoded on each receiver's clock.
type wire struct {
	from  int
	nodes *[]*Store
	drops *int
}

func (w wire) Broadcast(msg []byte) {
	for i, s := range *w.nodes {
		if i == w.from {
			continue
		}
		d, err := DecodeDelta(msg, s.Now())
		if err != nil {
			if !errors.Is(err, ErrSkew) {
				panic(err)
			}
			*w.drops++
			continue
		}
		for k := range d.Len() {
			if err := s.MergeDelta(d, k); err != nil {
				panic(err)
			}
		}
	}
}

// skewFleet is two nodes over the Transport seam on one virtual clock, the
// second reading it plus skew.
func skewFleet(t *testing.T, skew time.Duration) (nodes []*Store, now *int64, drops *int) {
	t.Helper()
	now = new(int64)
	*now = testNow
	drops = new(int)
	for i, off := range []time.Duration{0, skew} {
		s, err := New(Config{Config: gossipconf.Config{Name: fmt.Sprint("n", i)}, Clock: func() int64 { return *now + int64(off) }, Transport: wire{from: i, nodes: &nodes, drops: drops}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		nodes = append(nodes, s)
	}
	return nodes, now, drops
}

// skewRun sends one key perNode requests a second on each of two nodes
// whose clocks differ by skew, for d of virtual time, every node running a
// round every interval, and returns how many the fleet admitted and how
// many one decider (on the first node's clock) admits of the same
// requests.
func skewRun(t *testing.T, p limit.Stateful, skew time.Duration, perNode int, interval, d time.Duration) (admitted, ideal int) {
	t.Helper()
	nodes, now, drops := skewFleet(t, skew)
	ctx := context.Background()
	const step = time.Millisecond
	every := time.Second / time.Duration(perNode)
	var st limit.State
	for el := time.Duration(0); el < d; el += step {
		if el%interval == 0 {
			for _, s := range nodes {
				s.Round()
			}
		}
		if el%every == 0 {
			for _, s := range nodes {
				dec, err := s.Apply(ctx, "k", p, 1)
				if err != nil {
					t.Fatal(err)
				}
				if dec.Allowed {
					admitted++
				}
				nst, id := p.Decide(st, *now, 1)
				if id.Allowed {
					st = nst
					ideal++
				}
			}
		}
		*now += int64(step)
	}
	if *drops != 0 {
		t.Fatalf("%d messages dropped at a skew of %v", *drops, skew)
	}
	// They run on one time, the faster clock: the one behind took it up.
	if a, b := nodes[0].Now(), nodes[1].Now(); a != b || a != *now+max(int64(skew), 0) {
		t.Fatalf("fleet times %d and %d, %v apart, want both the faster clock's", a, b, time.Duration(a-b))
	}
	return admitted, ideal
}

// TestSkewedClocksShareOneLimit: two nodes whose clocks differ by 0.5,
// 1.5, 3 or 20 s, either way, admit together what one decider admits,
// within the overshoot the package documents (nodes × rate per node ×
// interval, per window) plus one limit (the window the node behind ends
// early when it takes up the fleet's time). On their own clocks (before
// the fleet's time), at 1.5 s or more each node enforced the whole limit
// alone: 40/s against 20/s (fixed window; 28/s at 0.5 s).
func TestSkewedClocksShareOneLimit(t *testing.T) {
	const (
		perNode  = 50
		interval = 20 * time.Millisecond
		run      = 10 * time.Second
	)
	for _, p := range []limit.Stateful{
		limit.FixedWindow{Limit: 20, Window: time.Second},
		limit.SlidingWindow{Limit: 20, Window: time.Second},
		limit.TokenBucket{Rate: limit.Per(20, time.Second), Burst: 20},
	} {
		for _, skew := range []time.Duration{500 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second, 20 * time.Second} {
			for _, sk := range []time.Duration{skew, -skew} {
				t.Run(fmt.Sprintf("%v/%v", p.Algorithm(), sk), func(t *testing.T) {
					admitted, ideal := skewRun(t, p, sk, perNode, interval, run)
					windows := int(run / time.Second)
					over := 2 * perNode * int(interval/time.Millisecond) * windows / 1000
					bound := ideal + over + 20
					t.Logf("admitted %d, one decider %d (%.1f/s against 20/s), bound %d", admitted, ideal, float64(admitted)/run.Seconds(), bound)
					if admitted > bound || admitted < ideal*8/10 {
						t.Errorf("skew %v: the fleet admitted %d, one decider %d: want %d to %d", sk, admitted, ideal, ideal*8/10, bound)
					}
				})
			}
		}
	}
}

// A node whose clock is more than MaxSkew from the fleet's is not heard:
// its messages are refused (ErrSkew; Stats.Dropped.Skew on a memberlist
// node), and the fleet's time stays.
func TestAClockBeyondTheAllowedSkewIsNotHeard(t *testing.T) {
	nodes, now, drops := skewFleet(t, MaxSkew+time.Second)
	p := limit.FixedWindow{Limit: 20, Window: time.Second}
	if _, err := nodes[1].Apply(context.Background(), "k", p, 1); err != nil {
		t.Fatal(err)
	}
	nodes[1].Round()
	if *drops != 1 || nodes[0].Now() != *now {
		t.Fatalf("%d drops, node 0 %v ahead of its clock; want 1 and 0", *drops, time.Duration(nodes[0].Now()-*now))
	}
}

// Over memberlist: a node whose clock is 3 s behind takes up the fleet's
// time from its join's state exchange, before it decides anything; one
// 2 s ahead moves the node it joins up to its own, and that one's next
// message the rest. (The clocks are fake and stand still, so the offsets
// are exact.)
func TestAJoiningNodeTakesUpTheFleetsTime(t *testing.T) {
	clock := newFakeClock()
	behind, ahead := newFakeClock(), newFakeClock()
	behind.advance(-3 * time.Second)
	ahead.advance(2 * time.Second)
	a := newNode(t, "a", clock, nil)
	b := newNode(t, "b", behind, []string{a.Addr()})
	if !b.Warm() || b.Offset() != 3*time.Second || b.Now() != a.Now() {
		t.Fatalf("b behind: warm %v, offset %v, %v from a", b.Warm(), b.Offset(), time.Duration(b.Now()-a.Now()))
	}
	c := newNode(t, "c", ahead, []string{a.Addr()})
	// c's join returns once c has merged a's state, but a, the node
	// joined, answers a push-pull by reading c's state, sending its own
	// and only then merging c's (memberlist's handleConn): a takes up
	// c's time a moment after the join, not before it returns.
	eventually(t, "a to take up c's time", func() bool { return a.Offset() == 2*time.Second })
	if c.Offset() != 0 || a.Offset() != 2*time.Second || a.Now() != c.Now() {
		t.Fatalf("c ahead: offsets a %v, c %v; a %v from c", a.Offset(), c.Offset(), time.Duration(a.Now()-c.Now()))
	}
	// a's next message, stamped with its time, moves b up too.
	if _, err := a.Apply(context.Background(), "k", limit.FixedWindow{Limit: 20, Window: time.Second}, 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b to take up c's time", func() bool { return b.Now() == c.Now() })
}
