package rules_test

import (
	"context"
	"fmt"
	"log"
	"net/netip"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// ExampleConfig_stores gives a local rule a store of its own (in a
// gateway, strict and eventual rules would get Redis-backed ones): the
// local rule, divided over 2 nodes, refuses first, and the request is then
// never charged on the shared store.
func ExampleConfig_stores() {
	// A fixed clock keeps the output exact across window boundaries.
	clock := func() int64 { return 1_700_000_000e9 }
	shared, _ := memory.New(memory.Config{Clock: clock}) // stands for Redis here
	defer shared.Close()
	node, _ := memory.New(memory.Config{Clock: clock})
	defer node.Close()
	engine, err := rules.New(rules.Config{
		Stores: func(r rules.Rule) (limit.Store, error) {
			if r.Consistency == rules.ConsistencyLocal {
				return node, nil
			}
			return nil, nil // the engine's store
		},
		Rules: []rules.Rule{
			{Name: "global", Policies: []rules.Policy{{Algorithm: "fixed_window", Limit: 100, Window: "1h"}}},
			{Name: "burst", Consistency: rules.ConsistencyLocal, Nodes: 2,
				Policies: []rules.Policy{{Algorithm: "fixed_window", Limit: 4, Window: "1m"}}},
		},
	}, shared)
	if err != nil {
		log.Fatal(err)
	}
	req := request{method: "GET", path: "/", remote: netip.MustParseAddrPort("192.0.2.1:1234")}
	for range 3 {
		res, _ := engine.Decide(context.Background(), req)
		fmt.Println(res.Outcome, res.Rule(), res.Decision.Remaining)
	}
	d, _ := shared.Apply(context.Background(), "global\x1fglobal\x1ffixed_window=1h0m0s\x1f192.0.2.1", limit.FixedWindow{Limit: 100, Window: time.Hour}, 0)
	fmt.Println("global remaining", d.Remaining)
	// Output:
	// allowed burst 1
	// allowed burst 0
	// refused burst 0
	// global remaining 98
}
