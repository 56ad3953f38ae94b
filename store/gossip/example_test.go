package gossip_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/gossip"
	"github.com/tollgate-dev/tollgate/store/gossip/gossipconf"
)

// Two nodes of a fleet on loopback: the second joins the first, is warm
// once it has its state, and both decide locally against one shared
// count.
func ExampleNew() {
	a, err := gossip.New(gossip.Config{Config: gossipconf.Config{Name: "edge-a", BindAddr: "127.0.0.1", BindPort: new(0)}})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	b, err := gossip.New(gossip.Config{Config: gossipconf.Config{Name: "edge-b", BindAddr: "127.0.0.1", Seeds: []string{a.Addr()}, BindPort: new(0)}})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	<-b.Ready() // the join's state exchange warmed it up

	ctx := context.Background()
	p := limit.TokenBucket{Rate: limit.Per(1000, time.Hour), Burst: 1000}
	a.Apply(ctx, "client:203.0.113.7", p, 600)
	// Within a round or two, b sees what a admitted (a peek, cost 0).
	for d, _ := b.Apply(ctx, "client:203.0.113.7", p, 0); d.Remaining > 400; d, _ = b.Apply(ctx, "client:203.0.113.7", p, 0) {
		time.Sleep(10 * time.Millisecond)
	}
	d, _ := b.Apply(ctx, "client:203.0.113.7", p, 600)
	fmt.Println(d.Allowed)
	// Output: false
}
