package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/memory"
)

func Example() {
	st, err := memory.New(memory.Config{MaxKeys: 1 << 20})
	if err != nil {
		panic(err)
	}
	defer st.Close()

	// 100 a minute with bursts of 20; convert the policy once, reuse it.
	var p limit.Policy = limit.TokenBucket{Rate: limit.Per(100, time.Minute), Burst: 20}
	ctx := context.Background()
	for range 20 {
		st.Apply(ctx, "client-42", p, 1)
	}
	d, _ := st.Apply(ctx, "client-42", p, 1)
	fmt.Println(d.Allowed, d.Limit, d.Remaining, d.RetryAfter.Round(time.Second))
	// Output: false 20 0 1s
}

func ExampleStore_ApplyAll() {
	st, _ := memory.New(memory.Config{})
	defer st.Close()
	perSecond, _ := limit.ParseRate("10/s")
	reqs := []limit.Request{
		{Key: "user-7/burst", Policy: limit.TokenBucket{Rate: perSecond}, Cost: 1},
		{Key: "user-7/hourly", Policy: limit.SlidingWindow{Limit: 5000, Window: time.Hour}, Cost: 1},
	}
	d, _ := st.ApplyAll(context.Background(), reqs)
	fmt.Println(d.Allowed, d.Policy)
	// Output: true token_bucket(rate=10/s, burst=10)
}
