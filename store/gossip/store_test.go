package gossip

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/gossip/gossipconf"
)

// fakeClock is a clock tests move by hand, shared by a test's nodes.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(testNow + int64(time.Second)) // one second into a minute
	return c
}

func (c *fakeClock) now() int64              { return c.ns.Load() }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// newNode starts a node on a free loopback port, closed at the end of the
// test.
func newNode(t testing.TB, name string, clock *fakeClock, seeds []string, tweak ...func(*Config)) *Store {
	t.Helper()
	cfg := Config{Config: gossipconf.Config{Name: name, BindAddr: "127.0.0.1", Seeds: seeds, Interval: 20 * time.Millisecond, BindPort: new(0)}, Clock: clock.now}
	for _, f := range tweak {
		f(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.shutdown(false) })
	<-s.joined // New joins in the background: the tests start from its end
	return s
}

func TestNewRefusesABadConfig(t *testing.T) {
	_, err := New(Config{Config: gossipconf.Config{BindAddr: "localhost", BindPort: new(70000), Key: []byte("short"), Interval: -1, Seeds: []string{"nohost"}}})
	if err == nil {
		t.Fatal("New accepted a bad config")
	}
	for _, want := range []string{"bind address", "bind port", "secret key", "interval", "seed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestBindPortZeroPicksAFreePort(t *testing.T) {
	s := newNode(t, "a", newFakeClock(), nil)
	if strings.HasSuffix(s.Addr(), ":0") || !strings.HasPrefix(s.Addr(), "127.0.0.1:") {
		t.Errorf("Addr %q", s.Addr())
	}
}

func TestUnsupportedAlgorithmsAreRefused(t *testing.T) {
	s := newNode(t, "a", newFakeClock(), nil)
	for _, p := range []limit.Policy{
		limit.SlidingLog{Limit: 5, Window: time.Second},
		limit.LeakyBucket{Rate: limit.Per(5, time.Second), Burst: 2},
	} {
		_, err := s.Apply(context.Background(), "k", p, 1)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), p.Algorithm().String()) {
			t.Errorf("%v: %v, want ErrUnsupported naming it", p, err)
		}
		if err := CheckPolicy(p); !errors.Is(err, ErrUnsupported) {
			t.Errorf("CheckPolicy(%v) = %v", p, err)
		}
		_, err = s.ApplyAll(context.Background(), []limit.Request{{Key: "k", Policy: p, Cost: 1}})
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("ApplyAll %v: %v", p, err)
		}
	}
	if _, err := s.Apply(context.Background(), "k", limit.FixedWindow{Limit: 0, Window: time.Second}, 1); !errors.Is(err, limit.ErrInvalidPolicy) {
		t.Errorf("invalid policy: %v", err)
	}
	if _, err := s.Apply(context.Background(), "k", limit.FixedWindow{Limit: 5, Window: time.Second}, -1); !errors.Is(err, limit.ErrNegativeCost) {
		t.Errorf("negative cost: %v", err)
	}
	if _, err := s.Apply(context.Background(), strings.Repeat("k", MaxKeyLen+1), limit.FixedWindow{Limit: 5, Window: time.Second}, 1); !errors.Is(err, ErrKeyTooLong) {
		t.Errorf("long key: %v", err)
	}
}

// A lone node decides exactly as the pure algorithm does on one state:
// the counters it keeps amount to the same state, step after step.
func TestALoneNodeDecidesAsThePureAlgorithm(t *testing.T) {
	policies := []limit.Policy{
		limit.FixedWindow{Limit: 7, Window: time.Second},
		limit.SlidingWindow{Limit: 7, Window: time.Second},
		limit.TokenBucket{Rate: limit.Per(7, time.Second), Burst: 3},
		limit.TokenBucket{Rate: limit.Per(100, time.Minute), Burst: 20},
	}
	clock := newFakeClock()
	s := newNode(t, "a", clock, nil, func(c *Config) { c.Interval = time.Hour })
	steps := []time.Duration{0, 0, 10, 50, 100, 130, 300, 999, 1000, 1001, 1500, 1800, 2100, 2500, 2600, 4000, 4001, 4002, 6500}
	for _, p := range policies {
		sp := p.(limit.Stateful)
		var st limit.State
		start := clock.now()
		for i, ms := range steps {
			for _, cost := range []int64{1, 2, 1} {
				now := start + int64(ms)*int64(time.Millisecond) + int64(i)
				clock.ns.Store(now)
				var want limit.Decision
				st, want = sp.Decide(st, now, cost)
				got, err := s.Apply(context.Background(), "k "+p.String(), p, cost)
				if err != nil {
					t.Fatal(err)
				}
				want.Policy = p
				if got != want {
					t.Fatalf("%v at +%dms cost %d:\n got %+v\nwant %+v", p, ms, cost, got, want)
				}
			}
		}
	}
}

func TestApplyAllIsAllOrNothing(t *testing.T) {
	s := newNode(t, "a", newFakeClock(), nil, func(c *Config) { c.Interval = time.Hour })
	ctx := context.Background()
	small := limit.FixedWindow{Limit: 2, Window: time.Minute}
	big := limit.TokenBucket{Rate: limit.Per(100, time.Minute), Burst: 100}
	reqs := []limit.Request{{Key: "a", Policy: big, Cost: 1}, {Key: "b", Policy: small, Cost: 1}, {Key: "b", Policy: small, Cost: 1}}
	d, err := s.ApplyAll(ctx, reqs)
	if err != nil || !d.Allowed {
		t.Fatalf("first batch: %+v, %v", d, err)
	}
	d, err = s.ApplyAll(ctx, reqs)
	if err != nil || d.Allowed || d.Index != 1 {
		t.Fatalf("second batch: %+v, %v; want refused by index 1", d, err)
	}
	if d, _ := s.Apply(ctx, "a", big, 0); d.Remaining != 99 {
		t.Errorf("refused batch charged key a: remaining %d, want 99", d.Remaining)
	}
}

func TestApplyDoesNotAllocateForAnExistingKey(t *testing.T) {
	s := newNode(t, "a", newFakeClock(), nil, func(c *Config) { c.Interval = time.Hour })
	ctx := context.Background()
	for _, p := range []limit.Policy{
		limit.FixedWindow{Limit: 1 << 30, Window: time.Minute},
		limit.SlidingWindow{Limit: 1 << 30, Window: time.Minute},
		limit.TokenBucket{Rate: limit.Per(1<<30, time.Minute), Burst: 1 << 30},
	} {
		if _, err := s.Apply(ctx, "hot", p, 1); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(1000, func() { s.Apply(ctx, "hot", p, 1) }); n != 0 {
			t.Errorf("%v: %.1f allocations per Apply", p, n)
		}
	}
}

// A batch of known keys allocates nothing either (applyall's working
// views are on the stack).
func TestApplyAllDoesNotAllocateForExistingKeys(t *testing.T) {
	s := newNode(t, "a", newFakeClock(), nil, func(c *Config) { c.Interval = time.Hour })
	reqs := []limit.Request{
		{Key: "client", Policy: limit.TokenBucket{Rate: limit.Per(1<<30, time.Minute), Burst: 1 << 30}, Cost: 1},
		{Key: "route", Policy: limit.FixedWindow{Limit: 1 << 40, Window: time.Minute}, Cost: 1},
		{Key: "client", Policy: limit.TokenBucket{Rate: limit.Per(1<<30, time.Minute), Burst: 1 << 30}, Cost: 1},
	}
	ctx := context.Background()
	if d, err := s.ApplyAll(ctx, reqs); err != nil || !d.Allowed {
		t.Fatalf("%+v %v", d, err)
	}
	if n := testing.AllocsPerRun(1000, func() { s.ApplyAll(ctx, reqs) }); n != 0 {
		t.Errorf("%.1f allocations per ApplyAll", n)
	}
}

// A node with seeds that answer nothing refuses to decide: it has not
// heard the fleet's counters.
func TestAColdNodeRefusesToDecide(t *testing.T) {
	s := newNode(t, "a", newFakeClock(), []string{"127.0.0.1:1"})
	if s.Warm() {
		t.Fatal("warm without a state exchange")
	}
	_, err := s.Apply(context.Background(), "k", limit.FixedWindow{Limit: 5, Window: time.Second}, 1)
	if !errors.Is(err, ErrNotWarm) {
		t.Fatalf("Apply: %v, want ErrNotWarm", err)
	}
	if st := s.Stats(); st.Warm {
		t.Errorf("Stats.Warm on a cold node")
	}
}

// Keys whose windows have ended are dropped: the table stays bounded,
// and a full table of keys being limited refuses new ones.
func TestKeysAgeOutAndTheTableIsBounded(t *testing.T) {
	clock := newFakeClock()
	s := newNode(t, "a", clock, nil, func(c *Config) { c.Interval = time.Hour; c.MaxKeys = 32 })
	ctx := context.Background()
	p := limit.FixedWindow{Limit: 5, Window: time.Second}
	full := 0
	for i := range 200 {
		_, err := s.Apply(ctx, string(rune('a'+i%26))+strings.Repeat("x", i/26), p, 5) // the whole limit
		if errors.Is(err, ErrFull) {
			full++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if full == 0 || s.Stats().Keys > 32 {
		t.Fatalf("%d refused, %d keys held; want a bound of 32", full, s.Stats().Keys)
	}
	clock.advance(3 * time.Second)
	if _, err := s.Apply(ctx, "new", p, 1); err != nil {
		t.Fatalf("after the windows ended: %v", err)
	}
	s.sweep(clock.now())
	if n := s.Stats().Keys; n != 1 {
		t.Errorf("%d keys after the sweep, want 1", n)
	}
}

// A flood of new keys past MaxKeys does not lock out new clients (issue
// 23: every newcomer got ErrFull, the rule's on_error, for two windows):
// a new key takes the place of the least recently used key that is not
// being limited, as in the memory store, and a key being limited is kept,
// so the flood earns nobody a fresh allowance. Learned keys (a peer's
// flood) make room the same way.
func TestAKeyFloodDoesNotLockOutNewcomers(t *testing.T) {
	clock := newFakeClock()
	s := newNode(t, "n", clock, nil, func(c *Config) { c.Interval = time.Hour; c.MaxKeys = 64 }) // not "a", encodeOne's peer
	ctx := context.Background()
	p := limit.FixedWindow{Limit: 5, Window: time.Minute}
	for range 5 {
		if d, err := s.Apply(ctx, "held", p, 1); err != nil || !d.Allowed {
			t.Fatalf("held: %+v, %v", d, err)
		}
	}
	sh := shape{alg: limit.AlgFixedWindow, period: int64(time.Minute), limit: 5}
	w := clock.now() / int64(time.Minute)
	refused := 0
	for i := range 5000 {
		key := fmt.Sprintf("client-%d", i)
		if i%2 == 1 { // a peer's flood, learned
			if !s.receive(encodeOne("peer-"+key, sh, counter{Win: w, Cur: 1}), false) {
				t.Fatal("a peer's delta refused")
			}
		}
		d, err := s.Apply(ctx, key, p, 1)
		if errors.Is(err, ErrFull) {
			refused++
		} else if err != nil || !d.Allowed {
			t.Fatalf("%s: %+v, %v", key, d, err)
		}
	}
	st := s.Stats()
	if refused != 0 || st.Keys > 64 || st.Evicted == 0 {
		t.Fatalf("%d newcomers refused, %d keys held, %d evicted; want none refused, at most 64 held", refused, st.Keys, st.Evicted)
	}
	if d, err := s.Apply(ctx, "held", p, 1); err != nil || d.Allowed {
		t.Fatalf("the key at its limit after the flood: %+v, %v; want refused (never evicted)", d, err)
	}
}

// A node whose only seed is itself (one list shared by a fleet of one)
// is the fleet: warm at once.
func TestANodeSeededWithItselfIsWarm(t *testing.T) {
	port := freeUDPTCPPort(t)
	s := newNode(t, "a", newFakeClock(), []string{fmt.Sprintf("127.0.0.1:%d", port)}, func(c *Config) { c.BindPort = &port })
	if !s.Warm() {
		t.Fatal("a node seeded with itself is cold")
	}
}

// freeUDPTCPPort returns a port free for TCP on loopback (memberlist
// binds TCP and UDP on it).
func freeUDPTCPPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
