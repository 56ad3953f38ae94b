package rules

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/limit"
)

func TestOnErrorOfRuleThenConfigThenLocal(t *testing.T) {
	for _, c := range []struct {
		cfg, rule, want failmode.Mode
	}{
		{"", "", failmode.Local},
		{failmode.Closed, "", failmode.Closed},
		{failmode.Closed, failmode.Open, failmode.Open},
		{"", failmode.Closed, failmode.Closed},
	} {
		cfg := Config{OnError: c.cfg}
		if got := cfg.OnErrorOf(&Rule{OnError: c.rule}); got != c.want {
			t.Errorf("config %q, rule %q: %q, want %q", c.cfg, c.rule, got, c.want)
		}
	}
}

// TestOldFailureModeSpellingsNameTheNewOnes: each old word, at each place,
// is refused with the word to write instead.
func TestOldFailureModeSpellingsNameTheNewOnes(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{OnStoreError: "refuse"}, "on_store_error: the old spelling of on_error: write on_error: closed"},
		{Config{OnStoreError: "allow"}, "on_store_error: the old spelling of on_error: write on_error: open"},
		{Config{OnError: "fail_open"}, `on_error: "fail_open" is the old spelling: write on_error: open`},
		{Config{Rules: []Rule{{Name: "s", Consistency: ConsistencyStrict, OnError: "fail_closed", Policies: oneRate}}},
			`rules[0].on_error: "fail_closed" is the old spelling: write on_error: closed`},
		{Config{OnError: "refuse"}, `on_error: "refuse" is the old spelling: write on_error: closed`},
	} {
		err := c.cfg.Validate()
		if err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

// TestStoreErrorFollowsTheMatchedRulesMode: an error the store returns is
// refused when a matched enforced rule's mode is closed, whether it comes
// from the rule or from the config, and allowed otherwise.
func TestStoreErrorFollowsTheMatchedRulesMode(t *testing.T) {
	strictClosed := Rule{Name: "login", Match: Match{Paths: []string{"/login"}}, Consistency: ConsistencyStrict, OnError: failmode.Closed, Policies: oneRate}
	open := Rule{Name: "all", Policies: oneRate}
	stores := func(Rule) (limit.Store, error) { return failingStore{}, nil }
	for _, c := range []struct {
		name    string
		cfg     Config
		path    string
		refused bool
	}{
		{"default mode (local) allows", Config{Rules: []Rule{open}}, "/", false},
		{"config closed refuses", Config{OnError: failmode.Closed, Rules: []Rule{open}}, "/", true},
		{"config open allows", Config{OnError: failmode.Open, Rules: []Rule{open}}, "/", false},
		{"a matched closed rule refuses", Config{OnError: failmode.Open, Stores: stores, Rules: []Rule{open, strictClosed}}, "/login", true},
		{"an unmatched closed rule does not", Config{OnError: failmode.Open, Stores: stores, Rules: []Rule{open, strictClosed}}, "/", false},
		{"a rule's open beats the config's closed", Config{OnError: failmode.Closed, Stores: stores,
			Rules: []Rule{{Name: "s", Consistency: ConsistencyStrict, OnError: failmode.Open, Policies: oneRate}}}, "/", false},
	} {
		e, err := New(c.cfg, failingStore{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		res, err := e.Decide(context.Background(), get(c.path, "192.0.2.1"))
		if err == nil || res.Outcome != Errored || res.Refused() != c.refused {
			t.Errorf("%s: outcome %v, refused %v, err %v", c.name, res.Outcome, res.Refused(), err)
		}
	}
}

// namingStore fails naming the key, as store/redis's scripts do.
type namingStore struct{}

func (namingStore) Apply(_ context.Context, key string, _ limit.Policy, _ int64) (limit.Decision, error) {
	return limit.Decision{}, fmt.Errorf("key tollgate:{%s} holds no token bucket state", key)
}

func (namingStore) ApplyAll(_ context.Context, reqs []limit.Request) (limit.Decision, error) {
	return limit.Decision{}, fmt.Errorf("key tollgate:{%s} holds no tollgate state", reqs[0].Key)
}

// TestStoreErrorLogHidesKeysAndRepeats: a store error naming the client's
// key is logged with the key hashed, once however many requests meet it,
// and the error Decide returns does not name it either.
func TestStoreErrorLogHidesKeysAndRepeats(t *testing.T) {
	var buf bytes.Buffer
	e, err := New(Config{Logger: slog.New(slog.NewTextHandler(&buf, nil)),
		Rules: []Rule{{Name: "api", Key: Key{"header:X-Api-Key"}, Policies: oneRate}}}, namingStore{})
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		_, err := e.Decide(context.Background(), get("/", "203.0.113.7").with("X-Api-Key", "sk-live-very-secret"))
		if err == nil || strings.Contains(err.Error(), "sk-live-very-secret") || !strings.Contains(err.Error(), "key#") {
			t.Fatalf("Decide error %v", err)
		}
	}
	out := buf.String()
	if strings.Contains(out, "sk-live-very-secret") {
		t.Fatalf("a raw key was logged:\n%s", out)
	}
	if n := strings.Count(out, "\n"); n != 1 || !strings.Contains(out, "key#") {
		t.Fatalf("want one line naming the hashed key, got %d:\n%s", n, out)
	}
}
