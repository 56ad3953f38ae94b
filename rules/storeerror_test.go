package rules

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/tollgate-dev/tollgate/limit"
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
