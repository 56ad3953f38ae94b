package limit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/store/memory"
)

func TestDivide(t *testing.T) {
	for _, c := range []struct {
		in, want limit.Policy
		nodes    int
	}{
		{limit.FixedWindow{Limit: 100, Window: time.Minute}, limit.FixedWindow{Limit: 33, Window: time.Minute}, 3},
		{limit.SlidingWindow{Limit: 2, Window: time.Second}, limit.SlidingWindow{Limit: 1, Window: time.Second}, 3},
		{limit.SlidingLog{Limit: 10, Window: time.Second}, limit.SlidingLog{Limit: 5, Window: time.Second}, 2},
		{limit.TokenBucket{Rate: limit.Per(100, time.Second)}, limit.TokenBucket{Rate: limit.Per(100, 3*time.Second), Burst: 33}, 3},
		{limit.LeakyBucket{Rate: limit.Per(10, time.Second), Burst: 5, Delay: 3}, limit.LeakyBucket{Rate: limit.Per(10, 3*time.Second), Burst: 1, Delay: 1}, 3},
		{limit.FixedWindow{Limit: 7, Window: time.Minute}, limit.FixedWindow{Limit: 7, Window: time.Minute}, 1},
	} {
		got, err := limit.Divide(c.in, c.nodes)
		if err != nil || got != c.want {
			t.Errorf("limit.Divide(%v, %d) = %v, %v; want %v", c.in, c.nodes, got, err, c.want)
		}
		if err == nil {
			if err := got.Validate(); err != nil {
				t.Errorf("limit.Divide(%v, %d) is invalid: %v", c.in, c.nodes, err)
			}
		}
	}
	if _, err := limit.Divide(limit.FixedWindow{Limit: 1, Window: time.Second}, 0); err == nil {
		t.Error("zero nodes accepted")
	}
}

// TestThreeNodesAdmitTheLimit: three nodes, each with its own memory store
// and a third of the limit, admit the limit (rounded down) together when
// traffic is spread evenly.
func TestThreeNodesAdmitTheLimit(t *testing.T) {
	p, _ := limit.Divide(limit.FixedWindow{Limit: 90, Window: time.Hour}, 3)
	var now int64 = 1
	admitted := 0
	for range 3 {
		st, _ := memory.New(memory.Config{Clock: func() int64 { return now }, SweepInterval: -1})
		defer st.Close()
		for range 100 {
			if d, _ := st.Apply(context.Background(), "k", p, 1); d.Allowed {
				admitted++
			}
		}
	}
	if admitted != 90 {
		t.Fatalf("admitted %d, want 90", admitted)
	}
}

func ExampleDivide() {
	p, _ := limit.Divide(limit.TokenBucket{Rate: limit.Per(300, time.Second), Burst: 60}, 3)
	fmt.Println(p)
	// Output: token_bucket(rate=300/3s, burst=20)
}

// A share that would be an invalid policy is an error, not a policy every
// request then fails on: a bucket slowed past limit.MaxSpan.
func TestDivideRefusesPastMaxSpan(t *testing.T) {
	slow := limit.Per(1, 21900*24*time.Hour) // 60 years for one token
	for _, p := range []limit.Policy{
		limit.TokenBucket{Rate: slow, Burst: 1},
		limit.LeakyBucket{Rate: slow, Mode: limit.Police},
	} {
		if p.Validate() != nil {
			t.Fatalf("%v: invalid before dividing", p)
		}
		if d, err := limit.Divide(p, 2); !errors.Is(err, limit.ErrInvalidPolicy) {
			t.Errorf("limit.Divide(%v, 2) = %v, %v; want ErrInvalidPolicy", p, d, err)
		}
	}
}
