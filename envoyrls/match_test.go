package envoyrls

import (
	"strings"
	"testing"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
)

// entries builds descriptor entries from key, value pairs.
func entries(kv ...string) []*rlv3.RateLimitDescriptor_Entry {
	var out []*rlv3.RateLimitDescriptor_Entry
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, &rlv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return out
}

func mustBuild(t testing.TB, files ...Source) *Limits {
	t.Helper()
	l, err := Build(files)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Descriptors find the limit envoyproxy/ratelimit's GetLimit finds for
// them (its TestBasicConfig and TestWildcardConfig).
func TestMatchFindsTheLimitEnvoyproxyFinds(t *testing.T) {
	basic := mustBuild(t, readFixture(t, "basic_config.yaml"))
	wild := mustBuild(t, readFixture(t, "wildcard.yaml"))
	for _, tc := range []struct {
		name    string
		l       *Limits
		domain  string
		entries []*rlv3.RateLimitDescriptor_Entry
		path    string // "" for no limit
		rpu     uint32
	}{
		{"unknown domain", basic, "foo", entries("key", "value"), "", 0},
		{"unknown key", basic, "test-domain", entries("key", "value"), "", 0},
		{"empty descriptor", basic, "test-domain", nil, "", 0},
		{"level without limit", basic, "test-domain", entries("key1", "value1"), "", 0},
		{"key-only default", basic, "test-domain", entries("key1", "value1", "subkey1", "something"), "key1_value1.subkey1", 5},
		{"key-value override", basic, "test-domain", entries("key1", "value1", "subkey1", "subvalue1"), "key1_value1.subkey1_subvalue1", 10},
		{"first level default", basic, "test-domain", entries("key2", "something"), "key2", 20},
		{"first level override", basic, "test-domain", entries("key2", "value2"), "key2_value2", 30},
		{"whitelisted value", basic, "test-domain", entries("key2", "value3"), "", 0},
		{"more entries than levels", basic, "test-domain", entries("key2", "value2", "subkey", "x"), "", 0},
		{"hour", basic, "test-domain", entries("key3", "foo"), "key3", 1},
		{"trailing wildcard", wild, "test-domain", entries("wild", "foo123"), "wild_foo*", 20},
		{"trailing wildcard, empty rest", wild, "test-domain", entries("wild", "foo"), "wild_foo*", 20},
		{"wildcard miss", wild, "test-domain", entries("wild", "bar"), "", 0},
		{"exact beside wildcard", wild, "test-domain", entries("noWild", "foo"), "noWild_foo", 20},
		{"no prefix match for exact", wild, "test-domain", entries("noWild", "foo1"), "", 0},
		// Only a trailing '*' is a wildcard: elsewhere it is a character.
		{"middle star is no wildcard", wild, "test-domain", entries("midWild", "barab"), "", 0},
		{"middle star matched literally", wild, "test-domain", entries("midWild", "bar*b"), "midWild_bar*b", 20},
		{"nested wildcard", wild, "test-domain", entries("nestedWild", "val1", "wild", "goo2"), "nestedWild_val1.wild_goo*", 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.l.Match(tc.domain, tc.entries)
			if tc.path == "" {
				if m.Limit != nil {
					t.Fatalf("limit %s, want none", m.Limit.Path)
				}
				return
			}
			if m.Limit == nil {
				t.Fatalf("no limit, want %s", tc.path)
			}
			if m.Limit.Path != tc.path || m.Limit.RequestsPerUnit != tc.rpu {
				t.Fatalf("limit %s %d/unit, want %s %d", m.Limit.Path, m.Limit.RequestsPerUnit, tc.path, tc.rpu)
			}
		})
	}
}

// A share_threshold wildcard shares one counter between the values it
// matches; without it each value counts on its own.
func TestShareThresholdSharesTheCounter(t *testing.T) {
	share := mustBuild(t, readFixture(t, "share_threshold.yaml"))
	wild := mustBuild(t, readFixture(t, "wildcard.yaml"))
	key := func(l *Limits, kv ...string) string {
		e := entries(kv...)
		m := l.Match("test-domain", e)
		if m.Limit == nil {
			t.Fatalf("%v: no limit", kv)
		}
		return counterKey("test-domain", e, m.Shared, m.Limit)
	}
	if key(share, "files", "files/a") != key(share, "files", "files/b") {
		t.Error("share_threshold: two values have two counters")
	}
	if key(wild, "wild", "foo1") == key(wild, "wild", "foo2") {
		t.Error("plain wildcard: two values share a counter")
	}
}

// Matching a descriptor allocates nothing (a share_threshold match, or a
// key and value beyond compositeBuf, aside).
func TestMatchDoesNotAllocate(t *testing.T) {
	l := mustBuild(t, readFixture(t, "wildcard.yaml"))
	for _, e := range [][]*rlv3.RateLimitDescriptor_Entry{
		entries("wild", "foo123"),
		entries("nestedWild", "val1", "wild", "goo2"),
		entries("noVal", strings.Repeat("v", compositeBuf-len("noVal_"))),
	} {
		if n := testing.AllocsPerRun(100, func() { l.Match("test-domain", e) }); n != 0 {
			t.Errorf("%v: %v allocations", e, n)
		}
	}
}
