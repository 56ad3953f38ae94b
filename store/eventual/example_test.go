package eventual_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/eventual"
	"github.com/tollgate-dev/tollgate/store/redis"
)

// Decide in process, sync with the other gateways through Redis every
// 100ms: a little overshoot for no round trip per request.
func ExampleNew() {
	ctx := context.Background()
	rs, err := redis.New(ctx, redis.Config{Addrs: []string{"127.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer rs.Close()
	st, err := eventual.New(eventual.Config{Redis: rs, Interval: 100 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close() // stops the sync after a last push

	d, _ := st.Apply(ctx, "client:203.0.113.7", limit.FixedWindow{Limit: 1000, Window: time.Minute}, 1)
	fmt.Println(d.Allowed)
}
