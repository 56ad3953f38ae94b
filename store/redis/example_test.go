package redis_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/tollgate-dev/tollgate/failmode"
	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/redis"
)

// A store shared by every gateway: 100 requests a minute per client,
// decided by one EVALSHA against Redis's clock.
func ExampleNew() {
	ctx := context.Background()
	st, err := redis.New(ctx, redis.Config{
		Addrs:     []string{"127.0.0.1:6379"},
		Timeout:   30 * time.Millisecond,
		OnFailure: failmode.Local, // decide in memory while Redis is down
	})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	p := limit.Policy(limit.SlidingWindow{Limit: 100, Window: time.Minute})
	d, err := st.Apply(ctx, "client:203.0.113.7", p, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Allowed, d.Remaining)
}

// Per-rule failure modes share one store's connections and breaker.
func ExampleStore_WithFailure() {
	ctx := context.Background()
	st, err := redis.New(ctx, redis.Config{Addrs: []string{"127.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	login := st.WithFailure(failmode.Closed) // never let a brute force through
	search := st.WithFailure(failmode.Open)  // availability first

	p := limit.Policy(limit.FixedWindow{Limit: 5, Window: time.Minute})
	if d, err := login.Apply(ctx, "login:{alice}", p, 1); err == nil && !d.Allowed {
		fmt.Println("retry after", d.RetryAfter)
	}
	search.Apply(ctx, "search:{alice}", p, 1)
	fmt.Printf("%+v\n", st.Stats())
}

// Several policies on one request, all or nothing, in one script: in a
// Redis Cluster the keys share a {hash tag}.
func ExampleStore_ApplyAll() {
	ctx := context.Background()
	st, err := redis.New(ctx, redis.Config{Addrs: []string{"127.0.0.1:7000"}})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	d, err := st.ApplyAll(ctx, []limit.Request{
		{Key: "per-second:{alice}", Policy: limit.TokenBucket{Rate: limit.Per(10, time.Second)}, Cost: 1},
		{Key: "per-hour:{alice}", Policy: limit.FixedWindow{Limit: 5000, Window: time.Hour}, Cost: 1},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Allowed, d.Index)
}
