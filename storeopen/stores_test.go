package storeopen

import (
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/internal/redistest"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/eventual"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/store/redis/redisconf"
)

// TestTierStores: the stores a Set gives each tier, over one Redis
// store: strict with the rules' failure mode is the engine's store (so it
// is charged atomically with the default rules), another mode another
// view; one eventual store per sync interval; one memory store for local
// rules.
func TestTierStores(t *testing.T) {
	rs := redistest.Start(t)
	ts, err := Open(config.Store{Redis: &redisconf.Config{URL: "redis://" + rs.Addr, Timeout: time.Second}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	cfg := &rules.Config{OnError: failmode.Local}
	byRule := ts.For(cfg)
	get := func(r rules.Rule) limit.Store {
		t.Helper()
		s, err := byRule(r)
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		return s
	}
	engine, err := ts.Engine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s := get(rules.Rule{Consistency: "strict"}); s != engine {
		t.Errorf("strict without on_error = %v, want the engine's store %v", s, engine)
	}
	if s := get(rules.Rule{Consistency: "strict", OnError: "local"}); s != engine {
		t.Errorf("strict with the rules' mode = %v, want the engine's store", s)
	}
	closed := get(rules.Rule{Consistency: "strict", OnError: "closed"})
	if closed == engine || closed != get(rules.Rule{Consistency: "strict", OnError: "closed"}) {
		t.Errorf("closed views: %v", closed)
	}
	e1, e2 := get(rules.Rule{Consistency: "eventual"}), get(rules.Rule{Consistency: "eventual", SyncInterval: 100 * time.Millisecond})
	e3 := get(rules.Rule{Consistency: "eventual", SyncInterval: time.Second})
	if _, ok := e1.(*eventual.Store); !ok || e1 != e2 || e1 == e3 {
		t.Errorf("eventual stores %p %p %p: want one per interval (0 = 100ms)", e1, e2, e3)
	}
	l1, l2 := get(rules.Rule{Consistency: "local"}), get(rules.Rule{Consistency: "local", Nodes: 3})
	if _, ok := l1.(*memory.Store); !ok || l1 != l2 {
		t.Errorf("local stores %T %T: want one memory store", l1, l2)
	}
	ts.closeTiers()
	if _, err := byRule(rules.Rule{Consistency: "eventual", SyncInterval: time.Minute}); err == nil {
		t.Error("a new eventual store after close")
	}

	mem, err := Open(config.Store{Memory: &config.MemoryStore{MaxKeys: 1024}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	if _, err := mem.Tier(rules.Rule{Consistency: "strict"}, failmode.Local); err == nil {
		t.Error("strict without Redis accepted")
	}
	if s, _ := mem.Tier(rules.Rule{Consistency: "local"}, failmode.Local); s != limit.Store(mem.mem) {
		t.Error("local on a memory gateway is not its store")
	}
}

// TestSame: the same store section read again (a reload) is the same
// store; another size or address is not.
func TestSame(t *testing.T) {
	set, err := Open(config.Store{Memory: &config.MemoryStore{MaxKeys: 1024}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if !set.Same(config.Store{Memory: &config.MemoryStore{MaxKeys: 1024}}) {
		t.Error("the same memory section read again is not the same store")
	}
	for _, other := range []config.Store{
		{Memory: &config.MemoryStore{MaxKeys: 2048}},
		{Redis: &redisconf.Config{URL: "redis://127.0.0.1:6379"}},
	} {
		if set.Same(other) {
			t.Errorf("%+v is the same store as a memory store of 1024 keys", other)
		}
	}
}
