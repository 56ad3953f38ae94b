package rules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/memory"
)

type failingStore struct{}

var errDown = errors.New("store down")

func (failingStore) Apply(context.Context, string, limit.Policy, int64) (limit.Decision, error) {
	return limit.Decision{}, errDown
}

func (failingStore) ApplyAll(context.Context, []limit.Request) (limit.Decision, error) {
	return limit.Decision{}, errDown
}

func TestStoreErrorFailsOpenByDefault(t *testing.T) {
	obs := &events{}
	e, err := New(Config{Observer: obs, Rules: []Rule{{Name: "r", Policies: oneRate}}}, failingStore{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Decide(context.Background(), get("/", "192.0.2.1"))
	if !errors.Is(err, ErrStore) || !errors.Is(err, errDown) {
		t.Fatalf("error %v", err)
	}
	if res.Outcome != Errored || res.Refused() {
		t.Fatalf("outcome %v refused %v", res.Outcome, res.Refused())
	}
	if h := headers(&res); len(h) != 0 {
		t.Fatalf("headers %v on a store failure", h)
	}
	if len(obs.list) != 1 || obs.list[0].Outcome != Errored || !errors.Is(obs.list[0].Err, errDown) {
		t.Fatalf("events %+v", obs.list)
	}
}

func TestStoreErrorFailsClosed(t *testing.T) {
	e, err := New(Config{OnError: "closed", Rules: []Rule{{Name: "r", Policies: oneRate}}}, failingStore{})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := e.Decide(context.Background(), get("/", "192.0.2.1"))
	if !res.Refused() {
		t.Fatal("not refused")
	}
	h := headers(&res)
	if len(h) != 1 || h[HeaderCacheControl] != "no-store" {
		t.Fatalf("headers %v", h)
	}
	ref := res.Refusal()
	var p map[string]any
	if err := json.Unmarshal(ref.Body, &p); err != nil || ref.Status != 503 || p["status"] != float64(503) {
		t.Fatalf("%d %s %v", ref.Status, ref.Body, err)
	}
	if _, ok := p["violated-policies"]; ok {
		t.Fatal("violated-policies on a store failure")
	}
}

// TestFullStoreRefusesWhateverTheFailureMode: a memory store full of
// clients being limited has no room for a new client's key (ErrFull). The
// new client is refused even with on_error open: allowing it would let a
// flood of limited keys switch limiting off for every new client.
func TestFullStoreRefusesWhateverTheFailureMode(t *testing.T) {
	now := int64(1_000_000_000_000)
	store, err := memory.New(memory.Config{MaxKeys: 4, Shards: 1, Clock: func() int64 { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e, err := New(Config{OnError: failmode.Open, Rules: []Rule{{Name: "r",
		Policies: []Policy{{Algorithm: "fixed_window", Limit: 1, Window: "1h"}}}}}, store)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 { // four clients, each at its limit
		if res, err := e.Decide(context.Background(), get("/", fmt.Sprintf("192.0.2.%d", i+1))); err != nil || res.Refused() {
			t.Fatalf("client %d: %v %v", i, res.Outcome, err)
		}
	}
	res, err := e.Decide(context.Background(), get("/", "198.51.100.1"))
	if !errors.Is(err, limit.ErrFull) {
		t.Fatalf("a fifth client in a store of four limited keys: %v, want ErrFull", err)
	}
	if !res.Refused() || res.Refusal().Status != 503 {
		t.Fatalf("with on_error open, a client the full store could not count was not refused: %v", res.Outcome)
	}
}
