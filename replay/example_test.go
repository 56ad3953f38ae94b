package replay_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/tollgate-dev/tollgate/replay"
)

// Replay five requests of one client against a token bucket of 1/s with a
// burst of 2, and ask for the burst that would have refused nothing.
func ExampleRun() {
	log := `192.0.2.7 - - [30/Nov/2026:10:00:00 +0000] "GET /a HTTP/1.1" 200 5
192.0.2.7 - - [30/Nov/2026:10:00:00 +0000] "GET /b HTTP/1.1" 200 5
192.0.2.7 - - [30/Nov/2026:10:00:00 +0000] "GET /c HTTP/1.1" 200 5
192.0.2.7 - - [30/Nov/2026:10:00:01 +0000] "GET /d HTTP/1.1" 200 5
192.0.2.7 - - [30/Nov/2026:10:00:01 +0000] "GET /e HTTP/1.1" 200 5
`
	p, err := replay.ParsePolicy("token_bucket:rate=1/s,burst=2")
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := replay.Run(context.Background(), strings.NewReader(log), replay.Config{
		Policies: []replay.Policy{p},
		Suggest:  true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	pr := rep.Policies[0]
	fmt.Printf("%s: %d of %d refused, first at %s\n", pr.Name, pr.Refused, pr.Requests,
		pr.BusiestVerdict.FirstRefused.Format("15:04:05"))
	fmt.Println("refuses nobody:", pr.Suggestion.ForTopPolicy)
	// Output:
	// token_bucket(rate=1/s, burst=2): 2 of 5 refused, first at 10:00:00
	// refuses nobody: token_bucket:rate=1/s,burst=4
}

// Policies are written as on the command line.
func ExampleParsePolicy() {
	for _, s := range []string{
		"sliding_window:limit=100,window=1m",
		"fixed_window:rate=7/90s",
		"leaky_bucket:rate=10/s,burst=5,mode=shape,delay=2,name=api",
	} {
		p, err := replay.ParsePolicy(s)
		fmt.Println(p.Name, p.Policy, err)
	}
	// Output:
	//  sliding_window(limit=100, window=1m) <nil>
	//  fixed_window(limit=7, window=1m30s) <nil>
	// api leaky_bucket(rate=10/s, burst=5, mode=shape, delay=2) <nil>
}
