package topk_test

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/topk"
)

func ExampleSummary() {
	s, err := topk.New(topk.Config{Counters: 2})
	if err != nil {
		panic(err)
	}
	for _, ip := range []string{"a", "a", "b", "a", "c", "a"} {
		s.Add(ip, 1, 0)
	}
	for _, e := range s.Top(nil, 2) {
		fmt.Printf("%s %d (at least %d)\n", e.Key, e.Count, e.Count-e.Error)
	}
	// Output:
	// a 4 (at least 4)
	// c 2 (at least 1)
}
