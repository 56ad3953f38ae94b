package rules

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/limit"
)

// recordingStore is a limit.Store that records the keys it is asked about
// and allows everything. It exists to look at keys, which a real store
// hides; decisions are tested against store/memory.
type recordingStore struct{ keys []string }

func (s *recordingStore) Apply(_ context.Context, key string, p limit.Policy, cost int64) (limit.Decision, error) {
	s.keys = append(s.keys, key)
	return limit.Decision{Allowed: true, Policy: p}, nil
}

func (s *recordingStore) ApplyAll(ctx context.Context, reqs []limit.Request) (limit.Decision, error) {
	for _, r := range reqs {
		s.keys = append(s.keys, r.Key)
	}
	return limit.Decision{Allowed: true}, nil
}

func keysOf(t *testing.T, cfg Config, r *req) []string {
	t.Helper()
	s := &recordingStore{}
	e, err := New(cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Decide(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return s.keys
}

var oneRate = []Policy{{Rate: "10/s"}}

func TestKeys(t *testing.T) {
	long := strings.Repeat("k", 200)
	tests := []struct {
		name string
		key  Key
		r    *req
		want []string // nil: the rule does not apply
	}{
		{"ip default", nil, get("/", "192.0.2.1"), []string{"r\x1fr\x1ftoken_bucket\x1f192.0.2.1"}},
		{"v6 /64", Key{"ip"}, get("/", "2001:db8::1"), []string{"r\x1fr\x1ftoken_bucket\x1f2001:db8::/64"}},
		{"header", Key{"header:x-api-key"}, get("/", "192.0.2.1").with("X-API-Key", "abc"), []string{"r\x1fr\x1ftoken_bucket\x1fabc"}},
		{"header missing: not applied", Key{"header:X-API-Key"}, get("/", "192.0.2.1"), nil},
		{"query", Key{"query:api_key"}, &req{method: "GET", path: "/", query: map[string]string{"api_key": "q1"}}, []string{"r\x1fr\x1ftoken_bucket\x1fq1"}},
		{"grpc service", Key{"grpc_service"}, get("/pkg.Greeter/SayHello", "192.0.2.1"), []string{"r\x1fr\x1ftoken_bucket\x1fpkg.Greeter"}},
		{"grpc method", Key{"grpc_method", "header:X-Tenant"}, get("/pkg.Greeter/SayHello", "192.0.2.1").with("X-Tenant", "t1"), []string{"r\x1fr\x1ftoken_bucket\x1fpkg.Greeter/SayHello\x1ft1"}},
		{"grpc method of a non-gRPC path: not applied", Key{"grpc_method"}, get("/a/b/c", "192.0.2.1"), nil},
		{"composite", Key{"ip", "method", "path"}, get("/a", "192.0.2.1"), []string{"r\x1fr\x1ftoken_bucket\x1f192.0.2.1\x1fGET\x1f/a"}},
		{"host lower-cased without port", Key{"host"}, &req{method: "GET", host: "API.Example.com:443", path: "/"}, []string{"r\x1fr\x1ftoken_bucket\x1fapi.example.com"}},
		{"long value hashed", Key{"header:X-Key"}, get("/", "192.0.2.1").with("X-Key", long), []string{"r\x1fr\x1ftoken_bucket\x1f#" + hashHex(long)}},
		{"separator in value hashed", Key{"header:X-Key"}, get("/", "192.0.2.1").with("X-Key", "a\x1fb"), []string{"r\x1fr\x1ftoken_bucket\x1f#" + hashHex("a\x1fb")}},
		{"leading # hashed", Key{"header:X-Key"}, get("/", "192.0.2.1").with("X-Key", "#abc"), []string{"r\x1fr\x1ftoken_bucket\x1f#" + hashHex("#abc")}},
		{"no remote address: not applied", nil, &req{method: "GET", path: "/"}, nil},
		{"global", Key{"global"}, get("/a", "192.0.2.1"), []string{"r\x1fr\x1ftoken_bucket\x1f*"}},
		{"global without a remote address", Key{"global"}, &req{method: "GET", path: "/"}, []string{"r\x1fr\x1ftoken_bucket\x1f*"}},
		{"global and method", Key{"global", "method"}, get("/a", "192.0.2.1"), []string{"r\x1fr\x1ftoken_bucket\x1f*\x1fGET"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.r.header == nil {
				tt.r.header = map[string]string{}
			}
			got := keysOf(t, Config{Rules: []Rule{{Name: "r", Key: tt.key, Policies: oneRate}}}, tt.r)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("keys %q, want %q", got, tt.want)
			}
		})
	}
}

func hashHex(s string) string {
	var e Engine
	b := e.appendClientValue(nil, s)
	return string(b[1:])
}

func TestAnonymousBucket(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{{
		Name: "by-key", Key: Key{"header:X-API-Key"}, Anonymous: true,
		Policies: []Policy{{Algorithm: "fixed_window", Limit: 2, Window: "1m"}},
	}}})
	// Clients without a key share one bucket, whoever they are.
	decide(t, e, get("/", "192.0.2.1"))
	decide(t, e, get("/", "192.0.2.2"))
	if res := decide(t, e, get("/", "192.0.2.3")); res.Outcome != Refused {
		t.Fatalf("third anonymous request: %v", res.Outcome)
	}
	// A keyed client has its own.
	if res := decide(t, e, get("/", "192.0.2.3").with("X-API-Key", "k")); res.Outcome != Allowed {
		t.Fatalf("keyed request: %v", res.Outcome)
	}
}

// A global key is one counter for everybody the rule matches.
func TestGlobalKeySharedByAllClients(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{{
		Name: "origin-cap", Key: Key{"global"},
		Policies: []Policy{{Algorithm: "fixed_window", Limit: 2, Window: "1m"}},
	}}})
	decide(t, e, get("/", "192.0.2.1"))
	decide(t, e, get("/", "198.51.100.7").with("X-API-Key", "k"))
	if res := decide(t, e, get("/", "203.0.113.9")); res.Outcome != Refused {
		t.Fatalf("third request from a third client: %v, want refused", res.Outcome)
	}
}

func TestMissingKeyRuleDoesNotApply(t *testing.T) {
	e, _ := newEngine(t, Config{Rules: []Rule{{
		Name: "by-key", Key: Key{"header:X-API-Key"},
		Policies: []Policy{{Algorithm: "fixed_window", Limit: 1, Window: "1m"}},
	}}})
	for i := 0; i < 5; i++ {
		if res := decide(t, e, get("/", "192.0.2.1")); res.Outcome != Allowed || res.Matched() {
			t.Fatalf("request %d without key: %v matched %v", i, res.Outcome, res.Matched())
		}
	}
}

// TestRulesNeverShareKeys: two rules with the same key and policy count
// separately.
func TestRulesNeverShareKeys(t *testing.T) {
	p := []Policy{{Algorithm: "fixed_window", Limit: 2, Window: "1m"}}
	e, _ := newEngine(t, Config{Rules: []Rule{
		{Name: "a", Match: Match{Paths: []string{"/a"}}, Policies: p},
		{Name: "b", Match: Match{Paths: []string{"/b"}}, Policies: p},
	}})
	decide(t, e, get("/a", "192.0.2.1"))
	decide(t, e, get("/a", "192.0.2.1"))
	if res := decide(t, e, get("/b", "192.0.2.1")); res.Outcome != Allowed || res.Decision.Remaining != 1 {
		t.Fatalf("rule b after two on a: %v remaining %d", res.Outcome, res.Decision.Remaining)
	}
}

func TestKeyCacheBounded(t *testing.T) {
	c := newKeyCache(32)
	for i := 0; i < 10000; i++ {
		c.intern([]byte("key-" + strings.Repeat("x", i%50) + string(rune('a'+i%26))))
	}
	total := 0
	for i := range c.slots {
		if c.slots[i].Load() != nil {
			total++
		}
	}
	if total == 0 || total > len(c.slots) || len(c.slots) != 64 {
		t.Fatalf("cache holds %d keys in %d slots, capacity 32", total, len(c.slots))
	}
	if a, b := c.intern([]byte("same")), c.intern([]byte("same")); a != b {
		t.Fatal("intern changed the key")
	}
}

// TestKeyNamesTheStateKind: a reload that changes a rule's algorithm or
// window must not read the old state as the new policy's (a 1m window's
// state read as a 1h window's was a key stuck refused); one that changes
// only a rate or a limit keeps the counters.
// Up to about half its capacity of live keys, the cache allocates for
// almost none of them once they are in: a set holds several keys whose
// hashes meet. A miss allocates twice (the entry and the string).
func TestKeyCacheHitsBelowHalfCapacity(t *testing.T) {
	const capacity = 4096
	c := newKeyCache(capacity)
	keys := make([][]byte, capacity/2)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("rule\x1fpolicy\x1ftoken_bucket\x1f10.%d.%d.%d", i>>16, (i>>8)&255, i&255))
		c.intern(keys[i])
	}
	allocs := testing.AllocsPerRun(5, func() {
		for _, k := range keys {
			c.intern(k)
		}
	})
	// Balls in bins: about 2% of the keys share a set with four others.
	if misses := allocs / 2; misses > float64(len(keys))/20 {
		t.Fatalf("%v of %d live keys missed on every pass", misses, len(keys))
	}
	// Twice as many live keys as the capacity: most miss, and the
	// cache still answers every key right.
	c = newKeyCache(64)
	for i := range 256 {
		k := []byte(fmt.Sprintf("k%d", i))
		if got := c.intern(k); got != string(k) {
			t.Fatalf("intern(%q) = %q", k, got)
		}
	}
}

func TestKeyNamesTheStateKind(t *testing.T) {
	r := get("/", "192.0.2.1")
	key := func(p Policy) string {
		return keysOf(t, Config{Rules: []Rule{{Name: "r", Policies: []Policy{p}}}}, r)[0]
	}
	minute := key(Policy{Algorithm: "fixed_window", Limit: 10, Window: "1m"})
	if minute == key(Policy{Algorithm: "fixed_window", Limit: 10, Window: "1h"}) {
		t.Error("a new window length reuses the old window's key")
	}
	if minute == key(Policy{Algorithm: "sliding_window", Limit: 10, Window: "1m"}) {
		t.Error("a new algorithm reuses the old algorithm's key")
	}
	if minute != key(Policy{Algorithm: "fixed_window", Limit: 20, Window: "1m"}) {
		t.Error("a new limit lost the counters")
	}
	if key(Policy{Rate: "10/s"}) != key(Policy{Rate: "20/s", Burst: 50}) {
		t.Error("a new rate lost the token bucket's counters")
	}
}
