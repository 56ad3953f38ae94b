package memory

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/rules"
)

func newTest(t *testing.T, cfg Config) (*Store, *int64) {
	t.Helper()
	now := new(int64)
	*now = 1_767_225_600_000_000_000
	cfg.Clock = func() int64 { return *now }
	cfg.SweepInterval = -1
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, now
}

func TestBoundedKeys(t *testing.T) {
	s, _ := newTest(t, Config{MaxKeys: 4, Shards: 1})
	p := limit.TokenBucket{Rate: limit.Per(1, time.Hour), Burst: 10}
	for i := range 100 {
		if _, err := s.Apply(context.Background(), fmt.Sprint("k", i), p, 1); err != nil {
			t.Fatal(err)
		}
	}
	st := s.Stats()
	if st.Keys > 4 {
		t.Fatalf("%d keys live; MaxKeys is 4", st.Keys)
	}
	if st.Evictions != 96 {
		t.Fatalf("%d evictions; want 96", st.Evictions)
	}
}

// TestEvictionPrefersIdleThenLeastRecentlyUsed: under pressure an idle key
// goes first (losslessly), then the least recently decided key that is
// not being limited; a key with nothing left stays, however old.
func TestEvictionPrefersIdleThenLeastRecentlyUsed(t *testing.T) {
	s, now := newTest(t, Config{MaxKeys: 4, Shards: 1})
	ctx := context.Background()
	p := limit.TokenBucket{Rate: limit.Per(1, time.Second), Burst: 100}
	mustApply := func(key string, cost int64) limit.Decision {
		t.Helper()
		d, err := s.Apply(ctx, key, p, cost)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	mustApply("limited", 100) // nothing left: never evicted
	mustApply("short", 1)     // idle after 1s
	mustApply("old", 10)
	mustApply("recent", 90)
	*now += int64(2 * time.Second)
	mustApply("recent", 0)
	mustApply("new1", 1) // "short" is idle: dropped, not evicted
	if st := s.Stats(); st.Evictions != 0 || st.Expired != 1 {
		t.Fatalf("stats %+v; want the idle key expired, nothing evicted", st)
	}
	mustApply("new2", 1) // evicts "old", the least recently decided
	if st := s.Stats(); st.Evictions != 1 {
		t.Fatalf("stats %+v; want one eviction", st)
	}
	if d := mustApply("limited", 0); d.Remaining != 2 {
		t.Fatalf("the limited key was evicted (remaining %d; want 2)", d.Remaining)
	}
	if d := mustApply("recent", 0); d.Remaining != 100-90+2 {
		t.Fatalf("the recent key was evicted (remaining %d)", d.Remaining)
	}
	if d := mustApply("old", 0); d.Remaining != 100 {
		t.Fatalf("the old key was kept (remaining %d); want it evicted", d.Remaining)
	}
}

// TestNoRoomAmongLimitedKeys: when every key is being limited, a new key
// is not stored and its request not decided (ErrFull, counted in Stats),
// for every algorithm and in a batch, which then charges nothing; the
// limited keys keep their state, and once they are idle the new key fits.
func TestNoRoomAmongLimitedKeys(t *testing.T) {
	ctx := context.Background()
	sec := time.Second
	for _, p := range []limit.Policy{
		limit.TokenBucket{Rate: limit.Per(1, sec), Burst: 2},
		limit.FixedWindow{Limit: 2, Window: sec},
		limit.SlidingWindow{Limit: 2, Window: sec},
		limit.LeakyBucket{Rate: limit.Per(1, sec), Burst: 1},
		limit.SlidingLog{Limit: 2, Window: sec},
	} {
		t.Run(p.Algorithm().String(), func(t *testing.T) {
			s, now := newTest(t, Config{MaxKeys: 2, Shards: 1})
			for _, k := range []string{"a", "b"} {
				for range 3 { // the third is refused
					if _, err := s.Apply(ctx, k, p, 1); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := s.Apply(ctx, "new", p, 1); !errors.Is(err, ErrFull) {
				t.Fatalf("a new key among limited ones: %v; want ErrFull", err)
			}
			_, err := s.ApplyAll(ctx, []limit.Request{{Key: "a", Policy: p, Cost: 0}, {Key: "new", Policy: p, Cost: 1}})
			if !errors.Is(err, ErrFull) {
				t.Fatalf("a batch with a new key among limited ones: %v; want ErrFull", err)
			}
			if st := s.Stats(); st.Full != 2 || st.Evictions != 0 || st.Keys != 2 {
				t.Fatalf("stats %+v; want 2 refused a place, nothing evicted, 2 keys", st)
			}
			for _, k := range []string{"a", "b"} {
				if d, _ := s.Apply(ctx, k, p, 1); d.Allowed {
					t.Fatalf("%s was given a fresh allowance", k)
				}
			}
			*now += int64(3 * sec)
			if d, err := s.Apply(ctx, "new", p, 1); err != nil || !d.Allowed {
				t.Fatalf("once the limited keys are idle: %+v, %v", d, err)
			}
		})
	}
}

func TestSweepDropsIdleStates(t *testing.T) {
	s, now := newTest(t, Config{Shards: 4})
	ctx := context.Background()
	for i := range 50 {
		s.Apply(ctx, fmt.Sprint("tb", i), limit.TokenBucket{Rate: limit.Per(1, time.Second)}, 1)
		s.Apply(ctx, fmt.Sprint("log", i), limit.SlidingLog{Limit: 5, Window: time.Minute}, 1)
	}
	*now += int64(30 * time.Second)
	for i := range s.shards {
		s.sweepShard(&s.shards[i], *now)
	}
	if st := s.Stats(); st.Keys != 50 || st.Expired != 50 {
		t.Fatalf("after 30s: %+v; want the 50 token buckets gone and the 50 logs kept", st)
	}
	*now += int64(30 * time.Second)
	for i := range s.shards {
		s.sweepShard(&s.shards[i], *now)
	}
	if st := s.Stats(); st.Keys != 0 {
		t.Fatalf("after 60s: %+v; want every log gone", st)
	}
}

func TestSweeperStopsOnClose(t *testing.T) {
	s, err := New(Config{SweepInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	select {
	case <-s.done:
	default:
		t.Fatal("sweeper still running after Close")
	}
	s.Close() // twice is fine
}

func TestBadInput(t *testing.T) {
	s, _ := newTest(t, Config{})
	ctx := context.Background()
	if _, err := s.Apply(ctx, "k", limit.TokenBucket{Rate: limit.Per(1, time.Second)}, -1); !errors.Is(err, limit.ErrNegativeCost) {
		t.Errorf("negative cost: %v", err)
	}
	if _, err := s.Apply(ctx, "k", limit.TokenBucket{}, 1); !errors.Is(err, limit.ErrInvalidPolicy) {
		t.Errorf("zero policy: %v", err)
	}
	if _, err := s.ApplyAll(ctx, []limit.Request{{Key: "k", Policy: limit.FixedWindow{}, Cost: 1}}); !errors.Is(err, limit.ErrInvalidPolicy) {
		t.Errorf("zero policy in a batch: %v", err)
	}
	if _, err := New(Config{MaxKeys: -1}); err == nil {
		t.Error("negative MaxKeys accepted")
	}
	long := string(make([]byte, 1<<20))
	if d, err := s.Apply(ctx, long, limit.FixedWindow{Limit: 1, Window: time.Second}, 1); err != nil || !d.Allowed {
		t.Errorf("a 1 MiB key: %+v, %v", d, err)
	}
}

// TestNoAllocs: a decision for an existing key allocates nothing, for
// every algorithm, alone and in a batch.
func TestNoAllocs(t *testing.T) {
	s, now := newTest(t, Config{})
	ctx := context.Background()
	sec := time.Second
	pols := []limit.Policy{
		limit.TokenBucket{Rate: limit.Per(1000, sec), Burst: 1000},
		limit.FixedWindow{Limit: 1000, Window: sec},
		limit.SlidingWindow{Limit: 1000, Window: sec},
		limit.LeakyBucket{Rate: limit.Per(1000, sec), Burst: 1000},
		limit.SlidingLog{Limit: 1000, Window: sec},
	}
	for _, p := range pols {
		s.Apply(ctx, "key", p, 1) // create the key (and warm the log buffer)
		for range 2000 {
			*now += int64(time.Millisecond)
			s.Apply(ctx, "key", p, 1)
		}
		if n := testing.AllocsPerRun(1000, func() {
			*now += int64(time.Millisecond)
			s.Apply(ctx, "key", p, 1)
		}); n != 0 {
			t.Errorf("%v: %.1f allocs per decision; want 0", p, n)
		}
	}
	reqs := []limit.Request{{Key: "a", Policy: pols[0], Cost: 1}, {Key: "b", Policy: pols[1], Cost: 1}}
	s.ApplyAll(ctx, reqs)
	if n := testing.AllocsPerRun(1000, func() { s.ApplyAll(ctx, reqs) }); n != 0 {
		t.Errorf("ApplyAll: %.1f allocs; want 0", n)
	}
}

// TestStaleClockAfterLockWait is the regression test for a goroutine that
// read the clock, waited for a busy key's lock, and then decided with that
// stale instant: under a rule that should never refuse, it was refused
// (86 of 120k requests through the gateway). A decision whose reading lags
// the shard's latest one reads the clock again under the lock.
func TestStaleClockAfterLockWait(t *testing.T) {
	start := int64(1_767_225_600_000_000_000)
	var readings []int64 // what the clock answers, in order; the last repeats
	clock := func() int64 {
		v := readings[0]
		if len(readings) > 1 {
			readings = readings[1:]
		}
		return v
	}
	s, err := New(Config{Shards: 1, SweepInterval: -1, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	p := limit.TokenBucket{Rate: limit.Per(1, time.Second), Burst: 1}
	sec := int64(time.Second)
	readings = []int64{start + sec}
	if d, _ := s.Apply(ctx, "k", p, 1); !d.Allowed { // TAT 2s
		t.Fatal("first request refused")
	}
	// Read 0.9s, then waited while the decision at 1s went first: decides
	// at the fresh reading 1.2s, 0.8s before the TAT.
	readings = []int64{start + 9*sec/10, start + 12*sec/10}
	if d, _ := s.Apply(ctx, "k", p, 0); d.ResetAfter != 800*time.Millisecond {
		t.Fatalf("decided at a stale instant: reset-after %v; want 800ms", d.ResetAfter)
	}
	readings = []int64{start + 11*sec/10, start + 15*sec/10}
	d, err := s.ApplyAll(ctx, []limit.Request{{Key: "k", Policy: p, Cost: 0}})
	if err != nil || d.ResetAfter != 500*time.Millisecond {
		t.Fatalf("batch decided at a stale instant: reset-after %v, %v; want 500ms", d.ResetAfter, err)
	}
}

// TestFloodNeverRefillsALimitedClient is the shape of a gateway rule with a
// short token bucket and a long sliding window (examples/per-ip-api.yaml)
// under a flood of new client addresses: the store is full, every flood
// request adds two keys, and one client sends 50 requests a second, far
// over its 10/s. Eviction must never give that client its burst back: it
// is admitted exactly its burst plus what refills in 30 s, 320, what the
// pure algorithm admits with no flood at all.
func TestFloodNeverRefillsALimitedClient(t *testing.T) {
	s, now := newTest(t, Config{MaxKeys: 1024, Shards: 4})
	ctx := context.Background()
	tb := limit.TokenBucket{Rate: limit.Per(10, time.Second), Burst: 20}
	sw := limit.SlidingWindow{Limit: 100_000, Window: time.Hour}
	request := func(ip string) limit.Decision {
		t.Helper()
		d, err := s.ApplyAll(ctx, []limit.Request{{Key: "tb:" + ip, Policy: tb, Cost: 1}, {Key: "sw:" + ip, Policy: sw, Cost: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	const (
		step  = 20 * time.Millisecond // the client's 50 requests a second
		steps = 1501                  // 0 to 30 s, both ends
		flood = 40                    // new addresses per step: 2,000 a second
	)
	start := *now
	var pure limit.State
	admitted, want, n := 0, 0, 0
	for i := range steps {
		*now = start + int64(i)*int64(step)
		next, d := tb.Decide(pure, *now, 1)
		if pure = next; d.Allowed {
			want++
		}
		if request("203.0.113.7").Allowed {
			admitted++
		}
		for j := range flood {
			*now = start + int64(i)*int64(step) + int64(j)*int64(step)/flood
			request(fmt.Sprint("flood-", n))
			n++
		}
	}
	if want != 20+30*10 {
		t.Fatalf("the pure token bucket admitted %d; the formula says %d", want, 20+30*10)
	}
	st := s.Stats()
	if admitted != want {
		t.Errorf("the limited client was admitted %d times among %d flood addresses; want exactly %d (stats %+v)", admitted, n, want, st)
	}
	if st.Keys > 1024 {
		t.Errorf("%d keys live; MaxKeys is 1024", st.Keys)
	}
	if st.Evictions == 0 {
		t.Errorf("nothing evicted (stats %+v): the flood did not fill the store", st)
	}
}

// floodRequest is a request through a trusted proxy at 127.0.0.1 for the
// client address in X-Forwarded-For.
type floodRequest struct{ xff string }

func (r floodRequest) Method() string              { return "GET" }
func (r floodRequest) Host() string                { return "api.example.com" }
func (r floodRequest) Path() string                { return "/api/items" }
func (r floodRequest) Query(string) (string, bool) { return "", false }
func (r floodRequest) RemoteAddr() netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 40000)
}
func (r floodRequest) Header(name string) (string, bool) {
	if name == "X-Forwarded-For" {
		return r.xff, true
	}
	return "", false
}

// TestRuleFloodKeepsALimitedClientExact is the gateway's repro at CI size,
// through the rule engine: a per-IP rule shaped as examples/per-ip-api.yaml
// (token_bucket 10/s burst 20 and sliding_window 100000/1h), a store capped
// at 4,096 keys, 100k requests from distinct forwarded addresses over 30 s,
// and one client at 50 requests a second. The client is admitted exactly
// burst + 30 s × 10/s, the store never holds more than its cap, and its
// tables stay the size the cap implies.
func TestRuleFloodKeepsALimitedClientExact(t *testing.T) {
	const maxKeys = 4096
	s, now := newTest(t, Config{MaxKeys: maxKeys})
	eng, err := rules.New(rules.Config{
		ClientIP: rules.ClientIP{TrustedProxies: []string{"127.0.0.1"}},
		Rules: []rules.Rule{{
			Name: "api-per-ip",
			Key:  rules.Key{"ip"},
			Policies: []rules.Policy{
				{Name: "per-second", Algorithm: "token_bucket", Rate: "10/s", Burst: 20},
				{Name: "per-hour", Algorithm: "sliding_window", Limit: 100_000, Window: "1h"},
			},
		}},
	}, s)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const (
		step  = 20 * time.Millisecond
		steps = 1501 // 0 to 30 s, both ends
		flood = 67   // per step: 100,567 addresses in all
	)
	start := *now
	client := floodRequest{"203.0.113.7"}
	admitted, n := 0, 0
	for i := range steps {
		*now = start + int64(i)*int64(step)
		res, err := eng.Decide(ctx, client)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome == rules.Allowed {
			admitted++
		}
		for j := range flood {
			*now = start + int64(i)*int64(step) + int64(j)*int64(step)/flood
			ip := fmt.Sprintf("10.%d.%d.%d", n>>16&255, n>>8&255, n&255)
			if _, err := eng.Decide(ctx, floodRequest{ip}); err != nil {
				t.Fatalf("flood request %d: %v", n, err)
			}
			n++
		}
	}
	st := s.Stats()
	if want := 20 + 30*10; admitted != want {
		t.Errorf("the limited client was admitted %d times among %d flood addresses; want exactly %d (stats %+v)", admitted, n, want, st)
	}
	if st.Keys > maxKeys || st.Evictions == 0 || st.Evictions+st.Expired+uint64(st.Keys) != uint64(2*n+2) {
		t.Errorf("stats %+v after %d new addresses (2 keys each); want at most %d keys, and every key stored either live, expired or evicted", st, n, maxKeys)
	}
	slots := 0
	for i := range s.shards {
		slots += len(s.shards[i].states.slots)
	}
	// A shard of 16 keys grows its table to at most 22 slots.
	if slots > maxKeys*3/2 {
		t.Errorf("%d table slots for a cap of %d keys", slots, maxKeys)
	}
}

// TestZeroMaxKeysHoldsTheDocumentedDefault checks that a zero MaxKeys
// bounds the store at DefaultMaxKeys, the 1,000,000 keys the gateway's
// configuration documents (store.memory.max_keys), not a second value.
func TestZeroMaxKeysHoldsTheDocumentedDefault(t *testing.T) {
	s, err := New(Config{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if capacity := s.perShard * len(s.shards); capacity > 1_000_000 || capacity < 1_000_000-len(s.shards) {
		t.Fatalf("zero MaxKeys holds %d keys, want 1,000,000 (rounded down to the shards)", capacity)
	}
}
