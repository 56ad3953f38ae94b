package storeopen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/gossip"
	"github.com/tollgate-dev/tollgate/store/gossip/gossipconf"
)

// request is the smallest rules.Request: a path from one client IP.
type request struct{ ip netip.AddrPort }

func (request) Method() string               { return "GET" }
func (request) Host() string                 { return "api.example" }
func (request) Path() string                 { return "/" }
func (request) Query(string) (string, bool)  { return "", false }
func (request) Header(string) (string, bool) { return "", false }
func (r request) RemoteAddr() netip.AddrPort { return r.ip }
func client(n int) request {
	return request{netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(n)}), 1234)}
}
func gossipSection(name string, seeds ...string) *gossipconf.Config {
	port := 0
	return &gossipconf.Config{Name: name, BindAddr: "127.0.0.1", BindPort: &port, Seeds: seeds,
		Interval: 20 * time.Millisecond}
}

// gossipEngine is a rule engine whose one rule, 10 per minute per client,
// is a gossip rule with failure mode onError, on set's stores.
func gossipEngine(t *testing.T, set *Set, onError failmode.Mode) *rules.Engine {
	t.Helper()
	cfg := rules.Config{OnError: failmode.Local, Rules: []rules.Rule{{
		Name: "api", Consistency: rules.ConsistencyGossip, OnError: onError,
		Policies: []rules.Policy{{Algorithm: "fixed_window", Limit: 10, Window: "1m"}},
	}}}
	cfg.Stores = set.For(&cfg)
	st, err := set.Engine(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := rules.New(cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestGossipTierSharesCounts: two gateways' Sets with store.gossip, one
// joining the other: a client's requests admitted on one count on the
// other, and the rule refuses at the fleet's limit, not each node's.
func TestGossipTierSharesCounts(t *testing.T) {
	a, err := Open(config.Store{Memory: &config.MemoryStore{MaxKeys: 1024}, Gossip: gossipSection("a")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(config.Store{Memory: &config.MemoryStore{MaxKeys: 1024}, Gossip: gossipSection("b", a.Gossip().Addr())}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	select {
	case <-b.Gossip().Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("b never warmed up")
	}
	ea, eb := gossipEngine(t, a, ""), gossipEngine(t, b, "")
	ctx := context.Background()
	for i := range 6 {
		if res, err := ea.Decide(ctx, client(1)); err != nil || res.Refused() {
			t.Fatalf("a, request %d: refused %v, %v", i, res.Refused(), err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for b.Gossip().Stats().Keys == 0 { // b learns the client's key
		if time.Now().After(deadline) {
			t.Fatal("b never learned a's key")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // fifteen rounds: every change sent
	admitted := 0
	for range 10 {
		res, err := eb.Decide(ctx, client(1))
		if err != nil {
			t.Fatal(err)
		}
		if !res.Refused() {
			admitted++
		}
	}
	if admitted != 4 {
		t.Fatalf("b admitted %d of the client's requests after a's 6, want 4 (limit 10 for the fleet)", admitted)
	}
	if c := b.ColdDecisions(); c != (ColdDecisions{}) {
		t.Fatalf("cold decisions on warm nodes: %+v", c)
	}
}

// TestGossipWarmUpAnswersByFailureMode: a gateway whose seeds do not
// answer is cold, and its gossip rules answer by their failure mode:
// closed refuses, open allows, local decides in this gateway alone (up to
// the whole limit); each counted.
func TestGossipWarmUpAnswersByFailureMode(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0") // a seed that never answers gossip
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	set, err := Open(config.Store{Memory: &config.MemoryStore{MaxKeys: 1024}, Gossip: gossipSection("cold", l.Addr().String())}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if set.Gossip().Warm() {
		t.Fatal("warm without any state exchange")
	}
	ctx := context.Background()
	decide := func(e *rules.Engine, n int) (allowed int) {
		for range n {
			res, err := e.Decide(ctx, client(2))
			if !res.Refused() {
				allowed++
			}
			if err != nil && !errors.Is(err, gossip.ErrNotWarm) && !res.Refused() {
				t.Fatalf("error %v", err)
			}
		}
		return allowed
	}
	if got := decide(gossipEngine(t, set, failmode.Closed), 3); got != 0 {
		t.Errorf("closed: %d allowed while cold, want 0", got)
	}
	if got := decide(gossipEngine(t, set, failmode.Open), 20); got != 20 {
		t.Errorf("open: %d of 20 allowed while cold, want all", got)
	}
	if got := decide(gossipEngine(t, set, failmode.Local), 20); got != 10 {
		t.Errorf("local: %d of 20 allowed while cold, want the limit, 10, decided alone", got)
	}
	if c := set.ColdDecisions(); c.Closed != 3 || c.Open != 20 || c.Local != 20 {
		t.Errorf("cold decisions %+v, want closed 3, open 20, local 20", c)
	}
}

// TestGossipableAgreesWithTheStore: the algorithms the rule engine lets be
// gossip rules (rules.Gossipable) are exactly those store/gossip enforces.
func TestGossipableAgreesWithTheStore(t *testing.T) {
	policies := map[limit.Algorithm]limit.Policy{
		limit.AlgFixedWindow:   limit.FixedWindow{Limit: 10, Window: time.Second},
		limit.AlgSlidingWindow: limit.SlidingWindow{Limit: 10, Window: time.Second},
		limit.AlgSlidingLog:    limit.SlidingLog{Limit: 10, Window: time.Second},
		limit.AlgTokenBucket:   limit.TokenBucket{Rate: limit.Per(10, time.Second), Burst: 10},
		limit.AlgLeakyBucket:   limit.LeakyBucket{Rate: limit.Per(10, time.Second), Burst: 10},
	}
	for a := limit.Algorithm(1); ; a++ {
		name := a.String()
		if name == "" || name == "Algorithm("+strconv.Itoa(int(a))+")" {
			break
		}
		p, ok := policies[a]
		if !ok {
			t.Fatalf("no policy for %v: add it here", a)
		}
		delete(policies, a)
		if err := gossip.CheckPolicy(p); rules.Gossipable(a) != (err == nil) {
			t.Errorf("%v: rules.Gossipable %v, gossip.CheckPolicy %v", a, rules.Gossipable(a), err)
		}
	}
	if len(policies) != 0 {
		t.Errorf("algorithms not met: %v", policies)
	}
}

// A gossip section read again (a reload) is the same store; another seed
// list or key needs a restart.
func TestSameGossipSection(t *testing.T) {
	sec := func(seeds ...string) config.Store {
		g := gossipSection("same", seeds...)
		g.Key = []byte("0123456789abcdef")
		return config.Store{Memory: &config.MemoryStore{MaxKeys: 1024}, Gossip: g}
	}
	set, err := Open(sec(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if !set.Same(sec()) {
		t.Error("the same gossip section read again is not the same store")
	}
	other := sec()
	other.Gossip.Key = []byte("fedcba9876543210")
	for _, o := range []config.Store{sec("127.0.0.1:7946"), other, {Memory: &config.MemoryStore{MaxKeys: 1024}}} {
		if set.Same(o) {
			t.Errorf("%+v is the same store", o.Gossip)
		}
	}
}

// memberlist writes one line per bad packet or stream (one not sealed
// with the key, one refused by the gossip node's stream gate): a stranger
// sending thousands writes thousands of ERROR lines. They are throttled:
// one line of a kind per window, whatever the addresses and errors in
// it, and one summary with the count when the window ends; a line of
// another kind is written at once.
func TestMemberlistLinesAreThrottled(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1_700_000_000, 0)
	l := newMemberlistLog(slog.New(slog.NewTextHandler(&buf, nil)), 10*time.Second, func() time.Time { return now })
	for i := range 1000 {
		fmt.Fprintf(l, "[ERR] memberlist: failed to receive: encryption is configured but remote state is not encrypted from=127.0.0.1:%d\n", 30000+i)
		fmt.Fprintf(l, "[WARN] gossip: stream refused (oversize): announces %d bytes, max_state_bytes is 8388608 from=127.0.0.1:%d\n", 20<<20+i, 30000+i)
	}
	fmt.Fprintf(l, "[DEBUG] memberlist: Stream connection from=127.0.0.1:1\n")
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Fatalf("%d lines for 2000 of two kinds, want 2:\n%s", n, buf.String())
	}
	now = now.Add(10 * time.Second)
	fmt.Fprintf(l, "[ERR] memberlist: failed to receive: EOF from=127.0.0.1:1\n")
	out := buf.String()
	if n := strings.Count(out, "\n"); n != 4 {
		t.Fatalf("%d lines after the window, want 4 (a summary and the new line):\n%s", n, out)
	}
	if !strings.Contains(out, "similar=999") || !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "level=WARN") {
		t.Fatalf("no summary of the 999 lines counted:\n%s", out)
	}
}
