package config

import (
	"testing"
	"time"
)

func TestTierKeysDecode(t *testing.T) {
	c, err := Parse("t.yaml", []byte(`store:
  redis: {url: "redis://127.0.0.1:6379"}
on_error: local
rules:
  - name: exact
    consistency: strict
    on_error: closed
    policies: [{rate: 10/s}]
  - name: fast
    consistency: eventual
    sync_interval: 250ms
    policies: [{rate: 10/s}]
  - name: share
    consistency: local
    nodes: 3
    policies: [{algorithm: fixed_window, limit: 90, window: 1m}]
  - name: plain
    policies: [{rate: 10/s}]
`))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Rules
	if r[0].Consistency != "strict" || r[0].OnError != "closed" || c.OnError != "local" ||
		r[1].Consistency != "eventual" || r[1].SyncInterval != 250*time.Millisecond ||
		r[2].Consistency != "local" || r[2].Nodes != 3 ||
		r[3].Consistency != "" || r[3].OnError != "" || r[3].SyncInterval != 0 || r[3].Nodes != 0 {
		t.Fatalf("rules = %+v", r)
	}
}

func TestTierKeysProblemsAtTheirLines(t *testing.T) {
	_, err := Parse("t.yaml", []byte(`rules:
  - name: a
    consistency: strict
    policies: [{rate: 10/s}]
  - name: b
    consistency: local
    nodes: -2
    policies: [{rate: 10/s}]
  - name: c
    consistency: sometimes
    on_error: closed
    policies: [{rate: 10/s}]
  - name: d
    consistency: eventual
    policies: [{rate: 10/s}]
`))
	checkProblems(t, err, []want{
		{3, "strict needs store.redis"},
		{7, "rules[1].nodes: -2 must not be negative"},
		{10, `rules[2].consistency: "sometimes"`},
		{11, "rules[2].on_error: set but the rule's consistency is neither strict nor gossip"},
		{14, "eventual needs store.redis"},
	})
	_, err = Parse("t.yaml", []byte("rules:\n  - name: a\n    consistency: eventual\n    sync_interval: soon\n    nodez: 3\n    policies: [{rate: 10/s}]\n"))
	checkProblems(t, err, []want{
		{3, "eventual needs store.redis"},
		{4, "rules[0].sync_interval: \"soon\" is not a duration"},
		{5, "nodez"},
	})
}

// TestOldFailureModeSpellingsAtTheirLines: every old spelling of the
// failure mode is refused at its line, naming what to write instead.
func TestOldFailureModeSpellingsAtTheirLines(t *testing.T) {
	_, err := Parse("t.yaml", []byte(`store:
  redis: {url: "redis://127.0.0.1:6379", on_error: closed}
on_store_error: refuse
rules:
  - name: a
    consistency: strict
    on_error: fail_open
    policies: [{rate: 10/s}]
`))
	checkProblems(t, err, []want{
		{2, "store.redis.on_error: the failure mode moved to the top level: write on_error: closed"},
		{3, "on_store_error: the old spelling of on_error: write on_error: closed"},
		{7, `rules[0].on_error: "fail_open" is the old spelling: write on_error: open`},
	})
	c, err := Parse("t.yaml", []byte("store: {redis: {url: \"redis://127.0.0.1:6379\"}}\non_error: closed\n"))
	if err != nil || c.OnError != "closed" {
		t.Fatalf("the new spelling: %v, %q", err, c.OnError)
	}
}
