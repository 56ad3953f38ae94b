package gossip

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/gossip/gossipconf"
)

// captured is a Transport that keeps what was broadcast.
type captured struct{ msgs [][]byte }

func (c *captured) Broadcast(msg []byte) { c.msgs = append(c.msgs, append([]byte(nil), msg...)) }

// Two nodes on a Transport: one's round reaches the other through
// DecodeDelta and MergeDelta, which then refuses what the pair together
// used up; a delta merged twice counts once.
func TestTransportCarriesRoundsToMergeDelta(t *testing.T) {
	clock := newFakeClock()
	var ta, tb captured
	a, err := New(Config{Config: gossipconf.Config{Name: "a"}, Clock: clock.now, Transport: &ta})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{Config: gossipconf.Config{Name: "b"}, Clock: clock.now, Transport: &tb})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	p := limit.FixedWindow{Limit: 10, Window: time.Minute}
	ctx := context.Background()
	for range 7 {
		if d, err := a.Apply(ctx, "k", p, 1); err != nil || !d.Allowed {
			t.Fatalf("a: %+v %v", d, err)
		}
	}
	a.Round()
	if len(ta.msgs) != 1 {
		t.Fatalf("a broadcast %d messages, want 1", len(ta.msgs))
	}
	d, err := DecodeDelta(ta.msgs[0], clock.now())
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 1 || d.Key(0) != "k" || d.Size() != len(ta.msgs[0]) {
		t.Fatalf("delta: %d keys, %q, %d bytes", d.Len(), d.Key(0), d.Size())
	}
	for range 2 {
		if err := b.MergeDelta(d, 0); err != nil {
			t.Fatal(err)
		}
	}
	if got := seen(b, "k"); got != 7 {
		t.Fatalf("b sees %d, want 7", got)
	}
	allowed := 0
	for range 5 {
		if d, _ := b.Apply(ctx, "k", p, 1); d.Allowed {
			allowed++
		}
	}
	if allowed != 3 {
		t.Fatalf("b allowed %d of 5, want 3", allowed)
	}
	if err := b.MergeDelta(d, 1); err == nil {
		t.Fatal("index 1 of a one-key delta merged")
	}
	if _, err := DecodeDelta([]byte{1, 1, 0}, clock.now()); !errors.Is(err, ErrMalformed) {
		t.Fatalf("garbage decoded: %v", err)
	}
	if st := a.Stats(); st.MessagesSent != 1 {
		t.Fatalf("stats: %+v", st)
	}
}

// A Transport broadcasts to every member: a fan-out is refused.
func TestTransportRefusesAFanout(t *testing.T) {
	if _, err := New(Config{Config: gossipconf.Config{Name: "a", Fanout: 2}, Transport: &captured{}}); err == nil {
		t.Fatal("fan-out with a Transport accepted")
	}
}

// A change after a quiet interval asks for a round at once (the nudge):
// Kicked says so once; a change right after a round with a fresh change
// does not ask.
func TestKickedReportsTheNudge(t *testing.T) {
	clock := newFakeClock()
	s, err := New(Config{Config: gossipconf.Config{Name: "a"}, Clock: clock.now, Transport: &captured{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Kicked() {
		t.Fatal("kicked before any change")
	}
	p := limit.FixedWindow{Limit: 10, Window: time.Minute}
	if _, err := s.Apply(context.Background(), "k", p, 1); err != nil {
		t.Fatal(err)
	}
	if !s.Kicked() {
		t.Fatal("a change after a quiet spell did not ask for a round")
	}
	if s.Kicked() {
		t.Fatal("one nudge reported twice")
	}
	s.Round()
	clock.advance(time.Millisecond)
	if _, err := s.Apply(context.Background(), "j", p, 1); err != nil {
		t.Fatal(err)
	}
	if s.Kicked() {
		t.Fatal("a change a millisecond after a fresh round asked for another")
	}
}

// A forged delta naming the receiving node itself with a window 30 s
// ahead (within the allowed skew, so it decodes) does not move the node's
// own counter on: its admissions still count, and it admits the limit
// and no more. (Merged, it made the node admit all 100: its admissions
// landed in the later window, which no view counts.) A window further
// ahead than the allowed skew is refused whole; both are counted.
func TestAForgedOwnWindowLiftsNoLimit(t *testing.T) {
	clock := newFakeClock()
	var ta captured
	a, err := New(Config{Config: gossipconf.Config{Name: "a"}, Clock: clock.now, Transport: &ta})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	p := limit.FixedWindow{Limit: 20, Window: time.Second}
	sh := shape{alg: limit.AlgFixedWindow, period: int64(time.Second), limit: 20}
	key := "k"
	w := clock.now() / sh.period
	ctx := context.Background()
	admitted := 0
	for i := range 100 {
		if i%10 == 0 { // forged again and again, as a flood would
			d, err := DecodeDelta(encodeOne(key, sh, counter{Win: w + 30}), clock.now())
			if err != nil {
				t.Fatal(err)
			}
			if err := a.MergeDelta(d, 0); err != nil {
				t.Fatal(err)
			}
		}
		d, err := a.Apply(ctx, key, p, 1)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
		}
	}
	if got := seen(a, key); admitted != 20 || got != 20 {
		t.Fatalf("a admitted %d of 100 under a forged own window, and sees %d used; want 20 and 20", admitted, got)
	}
	if st := a.Stats().Dropped; st.Future != 10 {
		t.Fatalf("dropped %+v, want 10 future", st)
	}
	if _, err := DecodeDelta(encodeOne(key, sh, counter{Win: w + int64(MaxSkew)/sh.period + 2}), clock.now()); !errors.Is(err, ErrFuture) {
		t.Fatalf("a window beyond the allowed skew decoded: %v", err)
	}
}
