package rules

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/racebuild"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// loggedStore is a memory store that records, in a log shared with other
// stores, each call's store name and request count.
type loggedStore struct {
	name string
	log  *callLog
	*memory.Store
}

type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(s string) {
	l.mu.Lock()
	l.calls = append(l.calls, s)
	l.mu.Unlock()
}

func (l *callLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.calls
	l.calls = nil
	return c
}

func (s *loggedStore) Apply(ctx context.Context, key string, p limit.Policy, cost int64) (limit.Decision, error) {
	s.log.add(s.name + ":1")
	return s.Store.Apply(ctx, key, p, cost)
}

func (s *loggedStore) ApplyAll(ctx context.Context, reqs []limit.Request) (limit.Decision, error) {
	s.log.add(fmt.Sprintf("%s:%d", s.name, len(reqs)))
	return s.Store.ApplyAll(ctx, reqs)
}

// tierStores is one store per tier plus the engine's, on one fake clock.
type tierStores struct {
	log                    *callLog
	def, strict, ev, local *loggedStore
	calls                  int
	clock                  *clock
}

func newTierStores(t *testing.T) *tierStores {
	ts := &tierStores{log: &callLog{}, clock: newClock()}
	open := func(name string) *loggedStore {
		st, err := memory.New(memory.Config{Clock: ts.clock.now, SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return &loggedStore{name: name, log: ts.log, Store: st}
	}
	ts.def, ts.strict, ts.ev, ts.local = open("default"), open("strict"), open("eventual"), open("local")
	return ts
}

func (ts *tierStores) stores(r Rule) (limit.Store, error) {
	ts.calls++
	switch r.Consistency {
	case ConsistencyStrict:
		return ts.strict, nil
	case ConsistencyEventual:
		return ts.ev, nil
	case ConsistencyLocal:
		return ts.local, nil
	}
	return nil, fmt.Errorf("asked for %q", r.Consistency)
}

func (ts *tierStores) engine(t *testing.T, cfg Config) *Engine {
	t.Helper()
	cfg.Stores = ts.stores
	cfg.Now = ts.clock.wall
	e, err := New(cfg, ts.def)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func fixed(n int64) []Policy {
	return []Policy{{Algorithm: "fixed_window", Limit: n, Window: "1h"}}
}

func TestConsistencyDefaultRulesNeverAskForAStore(t *testing.T) {
	ts := newTierStores(t)
	e := ts.engine(t, Config{Rules: []Rule{
		{Name: "a", Policies: fixed(5)},
		{Name: "b", Consistency: "default", Policies: fixed(5)},
	}})
	decide(t, e, get("/", "192.0.2.1"))
	if ts.calls != 0 || e.groups != nil {
		t.Fatalf("Stores called %d times, groups %v", ts.calls, e.groups)
	}
	if got := ts.log.take(); !slices.Equal(got, []string{"default:2"}) {
		t.Fatalf("calls %v, want one ApplyAll of both on the engine's store", got)
	}
}

// TestConsistencyGroupsCheapestFirst: a request matched by rules of every
// tier is charged local, eventual, default, strict, one call per store,
// whatever the rules' order.
func TestConsistencyGroupsCheapestFirst(t *testing.T) {
	ts := newTierStores(t)
	e := ts.engine(t, Config{Rules: []Rule{
		{Name: "s1", Consistency: "strict", Policies: fixed(100)},
		{Name: "d", Policies: fixed(100)},
		{Name: "e", Consistency: "eventual", Policies: fixed(100)},
		{Name: "s2", Consistency: "strict", OnError: "closed", Policies: fixed(100)},
		{Name: "l", Consistency: "local", Policies: fixed(100)},
	}})
	res := decide(t, e, get("/", "192.0.2.1"))
	if res.Outcome != Allowed {
		t.Fatalf("outcome %v", res.Outcome)
	}
	want := []string{"local:1", "eventual:1", "default:1", "strict:2"}
	if got := ts.log.take(); !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	if ts.calls != 4 {
		t.Fatalf("Stores called %d times, want once per rule with a tier (4)", ts.calls)
	}
}

// TestConsistencyRefusalStopsLaterGroups: a refusal by a cheap group
// leaves the later (shared) stores uncharged; a refusal by a later group
// leaves the earlier groups charged.
func TestConsistencyRefusalStopsLaterGroups(t *testing.T) {
	ts := newTierStores(t)
	e := ts.engine(t, Config{Rules: []Rule{
		{Name: "global", Consistency: "strict", Policies: fixed(3)},
		{Name: "node", Consistency: "local", Policies: fixed(2)},
	}})
	r := get("/", "192.0.2.1")
	for i := range 2 {
		if res := decide(t, e, r); res.Outcome != Allowed {
			t.Fatalf("request %d: %v", i, res.Outcome)
		}
	}
	ts.log.take()
	res := decide(t, e, r)
	if res.Outcome != Refused || res.Rule() != "node" || res.Policy() != "node" {
		t.Fatalf("outcome %v by %s/%s, want refused by node", res.Outcome, res.Rule(), res.Policy())
	}
	if got := ts.log.take(); !slices.Equal(got, []string{"local:1"}) {
		t.Fatalf("calls %v: the strict store was reached after a local refusal", got)
	}
	// The strict count is still 2 of 3: one more fits there.
	ctx := context.Background()
	key := "global\x1fglobal\x1ffixed_window=1h0m0s\x1f192.0.2.1"
	d, err := ts.strict.Store.Apply(ctx, key, limit.FixedWindow{Limit: 3, Window: time.Hour}, 0)
	if err != nil || d.Remaining != 1 {
		t.Fatalf("strict remaining %d (%v), want 1", d.Remaining, err)
	}
}

// TestConsistencyIndexNamesTheDecisiveRule: a refusal by the second group
// names that group's rule and policy, and the observer marks it decisive.
func TestConsistencyIndexNamesTheDecisiveRule(t *testing.T) {
	ts := newTierStores(t)
	obs := &events{}
	e := ts.engine(t, Config{Observer: obs, Rules: []Rule{
		{Name: "wide", Consistency: "local", Policies: []Policy{
			{Name: "w1", Algorithm: "fixed_window", Limit: 10, Window: "1h"},
			{Name: "w2", Algorithm: "fixed_window", Limit: 10, Window: "1m"},
		}},
		{Name: "tight", Consistency: "strict", Policies: []Policy{
			{Name: "t1", Algorithm: "fixed_window", Limit: 10, Window: "1h"},
			{Name: "t2", Algorithm: "fixed_window", Limit: 1, Window: "1h"},
		}},
		{Name: "plain", Policies: fixed(10)},
	}})
	r := get("/", "192.0.2.1")
	decide(t, e, r)
	obs.list = nil
	res := decide(t, e, r)
	if res.Outcome != Refused || res.Rule() != "tight" || res.Policy() != "t2" {
		t.Fatalf("outcome %v by %s/%s, want refused by tight/t2", res.Outcome, res.Rule(), res.Policy())
	}
	if v := res.AppendViolatedPolicies(nil); !slices.Equal(v, []string{"t2"}) {
		t.Fatalf("violated %v", v)
	}
	var decisive, outcomes []string
	for _, ev := range obs.list {
		if ev.Decisive {
			decisive = append(decisive, ev.Rule+"/"+ev.Policy)
		}
		outcomes = append(outcomes, ev.Rule+":"+ev.Outcome.String())
	}
	if !slices.Equal(decisive, []string{"tight/t2"}) {
		t.Fatalf("decisive events %v", decisive)
	}
	// wide (local) and plain (the engine's store) were charged before
	// strict refused: they admitted the request and keep its charge.
	if want := []string{"wide:allowed", "tight:refused", "plain:allowed"}; !slices.Equal(outcomes, want) {
		t.Fatalf("event outcomes %v, want %v", outcomes, want)
	}
	if h := headers(&res); !strings.Contains(h[HeaderRateLimit], `"t2"`) {
		t.Fatalf("RateLimit %q does not name t2", h[HeaderRateLimit])
	}
}

// TestConsistencySameStoreIsOneGroup: rules whose tiers map to the same
// store are charged in one atomic ApplyAll, and when that is the only
// store the engine takes the single-store path.
func TestConsistencySameStoreIsOneGroup(t *testing.T) {
	ts := newTierStores(t)
	cfg := Config{
		Stores: func(Rule) (limit.Store, error) { return ts.strict, nil },
		Rules: []Rule{
			{Name: "a", Consistency: "strict", Policies: fixed(1)},
			{Name: "b", Consistency: "strict", OnError: "local", Policies: fixed(5)},
		},
	}
	e, err := New(cfg, ts.def)
	if err != nil {
		t.Fatal(err)
	}
	if e.groups != nil || e.store != limit.Store(ts.strict) {
		t.Fatalf("groups %v, store %v: want the single-store path on the strict store", e.groups, e.store)
	}
	r := get("/", "192.0.2.1")
	decide(t, e, r)
	if res := decide(t, e, r); res.Outcome != Refused || res.Rule() != "a" {
		t.Fatalf("%v by %s", res.Outcome, res.Rule())
	}
	if got := ts.log.take(); !slices.Equal(got, []string{"strict:2", "strict:2"}) {
		t.Fatalf("calls %v", got)
	}
	// b was not charged by the refused request (all or nothing on one store).
	d, _ := ts.strict.Store.Apply(context.Background(), "b\x1fb\x1ffixed_window=1h0m0s\x1f192.0.2.1", limit.FixedWindow{Limit: 5, Window: time.Hour}, 0)
	if d.Remaining != 4 {
		t.Fatalf("b remaining %d, want 4", d.Remaining)
	}
}

func TestConsistencyLocalDividesByNodes(t *testing.T) {
	ts := newTierStores(t)
	e := ts.engine(t, Config{Rules: []Rule{
		{Name: "l", Consistency: "local", Nodes: 3, Policies: []Policy{{Algorithm: "fixed_window", Limit: 90, Window: "1m"}}},
	}})
	res := decide(t, e, get("/", "192.0.2.1"))
	if res.Decision.Limit != 30 || res.Decision.Remaining != 29 {
		t.Fatalf("limit %d remaining %d, want 30 and 29", res.Decision.Limit, res.Decision.Remaining)
	}
	if h := headers(&res); h[HeaderRateLimitPolicy] != `"l";q=30;w=60` {
		t.Fatalf("RateLimit-Policy %q", h[HeaderRateLimitPolicy])
	}
	// Without Stores the tier picks no store, but the share is the same.
	e2, _ := newEngine(t, Config{Rules: []Rule{
		{Name: "l", Consistency: "local", Nodes: 3, Tiers: &Tiers{Default: "free", Plans: map[string][]Policy{"free": {{Rate: "9/s"}}}}},
	}})
	res = decide(t, e2, get("/", "192.0.2.1"))
	if res.Decision.Limit != 3 {
		t.Fatalf("tiered local rule: limit %d, want 3", res.Decision.Limit)
	}
}

func TestConsistencyShadowRulesGroupedApart(t *testing.T) {
	ts := newTierStores(t)
	e := ts.engine(t, Config{Rules: []Rule{
		{Name: "enf", Consistency: "strict", Policies: fixed(1)},
		{Name: "sh", Shadow: true, Consistency: "local", Policies: fixed(1)},
		{Name: "sh2", Shadow: true, Policies: fixed(1)},
	}})
	r := get("/", "192.0.2.1")
	decide(t, e, r)
	res := decide(t, e, r)
	if res.Outcome != Refused || res.Rule() != "enf" || res.Shadow.Allowed {
		t.Fatalf("%v by %s, shadow %+v", res.Outcome, res.Rule(), res.Shadow)
	}
	want := []string{"strict:1", "local:1", "default:1", "strict:1", "local:1"}
	if got := ts.log.take(); !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
}

func TestConsistencyStoresErrorIsAFieldError(t *testing.T) {
	boom := errors.New("no redis configured")
	_, err := New(Config{
		Stores: func(Rule) (limit.Store, error) { return nil, boom },
		Rules: []Rule{
			{Name: "a", Policies: oneRate},
			{Name: "b", Consistency: "eventual", Policies: oneRate},
		},
	}, failingStore{})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Path != "rules[1].consistency" || !errors.Is(err, boom) || !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("error %v", err)
	}
}

// TestConsistencyStoreFailureStopsGroups: an erroring group ends the
// decision as a store error (the failure mode applies); later groups are not
// charged.
func TestConsistencyStoreFailureStopsGroups(t *testing.T) {
	ts := newTierStores(t)
	cfg := Config{
		OnError: "closed",
		Stores: func(r Rule) (limit.Store, error) {
			if r.Consistency == ConsistencyEventual {
				return failingStore{}, nil
			}
			return ts.strict, nil
		},
		Rules: []Rule{
			{Name: "s", Consistency: "strict", Policies: fixed(5)},
			{Name: "e", Consistency: "eventual", Policies: fixed(5)},
		},
	}
	e, err := New(cfg, ts.def)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Decide(context.Background(), get("/", "192.0.2.1"))
	if !errors.Is(err, errDown) || res.Outcome != Errored || !res.Refused() {
		t.Fatalf("%v %v refused=%v", err, res.Outcome, res.Refused())
	}
	if got := ts.log.take(); len(got) != 0 {
		t.Fatalf("calls %v after the eventual group failed", got)
	}
}

func TestConsistencyValidation(t *testing.T) {
	for _, c := range []struct {
		rule Rule
		path string
	}{
		{Rule{Consistency: "sometimes"}, "rules[0].consistency"},
		{Rule{OnError: "explode", Consistency: "strict"}, "rules[0].on_error"},
		{Rule{OnError: "fail_open"}, "rules[0].on_error"},
		{Rule{OnError: "local", Consistency: "eventual"}, "rules[0].on_error"},
		{Rule{SyncInterval: -time.Second, Consistency: "eventual"}, "rules[0].sync_interval"},
		{Rule{SyncInterval: time.Second, Consistency: "strict"}, "rules[0].sync_interval"},
		{Rule{Nodes: -1, Consistency: "local"}, "rules[0].nodes"},
		{Rule{Nodes: 3}, "rules[0].nodes"},
		{Rule{Consistency: "eventual", Policies: []Policy{{Algorithm: "sliding_log", Limit: 5, Window: "1m"}}}, "rules[0].policies[0].algorithm"},
		{Rule{Consistency: "local", Nodes: 2, Policies: []Policy{{Rate: "1/2000000h"}}}, "rules[0].policies[0]"},
	} {
		c.rule.Name = "r"
		if c.rule.Policies == nil {
			c.rule.Policies = oneRate
		}
		cfg := Config{Rules: []Rule{c.rule}}
		err := cfg.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Path != c.path {
			t.Errorf("%+v: error %v, want one at %s", c.rule, err, c.path)
		}
	}
	for _, r := range []Rule{
		{Consistency: "default"},
		{Consistency: "strict", OnError: "closed"},
		{Consistency: "strict", OnError: "open"},
		{Consistency: "eventual", SyncInterval: 50 * time.Millisecond},
		{Consistency: "local", Nodes: 3},
		{Consistency: "local", Nodes: 1},
	} {
		r.Name, r.Policies = "r", oneRate
		cfg := Config{Rules: []Rule{r}}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%+v: %v", r, err)
		}
	}
}

// TestConsistencyAllowedPathAllocatesNothing: several store groups cost
// no allocation on an allowed request either.
func TestConsistencyAllowedPathAllocatesNothing(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	c := newClock()
	open := func() *memory.Store {
		st, err := memory.New(memory.Config{Clock: c.now, SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	def, strict, loc := open(), open(), open()
	e, err := New(Config{
		Now: c.wall,
		Stores: func(r Rule) (limit.Store, error) {
			if r.Consistency == ConsistencyLocal {
				return loc, nil
			}
			return strict, nil
		},
		Rules: []Rule{
			{Name: "s", Consistency: "strict", Policies: []Policy{{Rate: "1000000/s"}}},
			{Name: "l", Consistency: "local", Policies: []Policy{{Rate: "1000000/s"}}},
			{Name: "l2", Consistency: "local", Policies: []Policy{{Rate: "1000000/s"}}},
		},
	}, def)
	if err != nil {
		t.Fatal(err)
	}
	r := get("/items/1", "192.0.2.1")
	n := allowedAllocs(t, e, r)
	if n != 0 {
		t.Fatalf("%v allocs, want 0", n)
	}
}
