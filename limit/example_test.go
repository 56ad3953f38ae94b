package limit_test

import (
	"fmt"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// The algorithms are pure: state in, state and decision out, time given.
func ExampleTokenBucket_Decide() {
	p := limit.TokenBucket{Rate: limit.Per(2, time.Second), Burst: 10}
	var st limit.State // an absent key
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	st, d := p.Decide(st, now, 10)
	fmt.Println(d.Allowed, d.Remaining, d.ResetAfter)
	_, d = p.Decide(st, now, 1)
	fmt.Println(d.Allowed, d.RetryAfter)
	// Output:
	// true 0 5s
	// false 500ms
}

func ExampleLeakyBucket_Decide() {
	// nginx: limit_req zone=z burst=5 delay=3 with rate=10r/s.
	p := limit.LeakyBucket{Rate: limit.Per(10, time.Second), Burst: 5, Mode: limit.Shape, Delay: 3}
	var st limit.State
	for i := 1; i <= 7; i++ {
		var d limit.Decision
		st, d = p.Decide(st, 0, 1)
		fmt.Println(i, d.Allowed, d.Delay)
	}
	// Output:
	// 1 true 0s
	// 2 true 0s
	// 3 true 0s
	// 4 true 0s
	// 5 true 100ms
	// 6 true 200ms
	// 7 false 0s
}

func ExampleParseRate() {
	r, _ := limit.ParseRate("7/90s")
	fmt.Println(r.Count, r.Period, time.Duration(r.Interval()))
	// Output: 7 1m30s 12.857142857s
}
