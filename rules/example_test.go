package rules_test

import (
	"context"
	"fmt"
	"log"
	"net/netip"

	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// request is a minimal rules.Request; HTTP adapters (package httplimit
// for net/http) implement it over their own request type.
type request struct {
	method, path string
	header       map[string]string
	remote       netip.AddrPort
}

func (r request) Method() string                 { return r.method }
func (r request) Host() string                   { return "api.example.com" }
func (r request) Path() string                   { return r.path }
func (r request) Query(string) (string, bool)    { return "", false }
func (r request) RemoteAddr() netip.AddrPort     { return r.remote }
func (r request) Header(n string) (string, bool) { v, ok := r.header[n]; return v, ok }

// Example shows the engine on its own: a per-IP limit with a stricter
// limit on searches, one decision per request, and what the response
// would carry.
func Example() {
	// A fixed clock keeps the output exact: on the wall clock, a run
	// across a minute boundary would start a new window midway.
	store, err := memory.New(memory.Config{Clock: func() int64 { return 1_700_000_000e9 }})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	engine, err := rules.New(rules.Config{
		Rules: []rules.Rule{{
			Name:     "per-ip",
			Policies: []rules.Policy{{Algorithm: "fixed_window", Limit: 10, Window: "1m"}},
			// A search costs 5, anything else 1.
			Cost: rules.Cost{By: []rules.CostBy{{Match: rules.Match{Paths: []string{"/search"}}, Cost: 5}}},
		}},
	}, store)
	if err != nil {
		log.Fatal(err)
	}
	client := netip.MustParseAddrPort("192.0.2.1:50000")
	for _, path := range []string{"/search", "/search", "/items"} {
		res, err := engine.Decide(context.Background(), request{method: "GET", path: path, remote: client})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(path, res.Outcome, res.Decision.Remaining)
		if res.Refused() {
			for _, h := range res.AppendHeaders(nil) {
				if h.Name == rules.HeaderRateLimitPolicy || h.Name == rules.HeaderCacheControl {
					fmt.Printf("  %s: %s\n", h.Name, h.Value)
				}
			}
			fmt.Println(" ", res.Refusal().Status, res.AppendViolatedPolicies(nil))
		}
	}
	// Output:
	// /search allowed 5
	// /search allowed 0
	// /items refused 0
	//   Ratelimit-Policy: "per-ip";q=10;w=60
	//   Cache-Control: no-store
	//   429 [per-ip]
}

// ExampleConfig_Validate shows every problem reported at once, each
// starting with the path of its field.
func ExampleConfig_Validate() {
	cfg := rules.Config{Rules: []rules.Rule{{
		Name:     "api",
		Key:      rules.Key{"cookie:session"},
		Policies: []rules.Policy{{Rate: "0/s"}, {Algorithm: "fixed_window", Limit: 100}},
	}}}
	fmt.Println(cfg.Validate())
	// Output:
	// rules[0].key[0]: unknown key part "cookie:session" (want ip, header:NAME, query:NAME, path, method, host, global, grpc_service, grpc_method, country, asn or ja4)
	// rules[0].policies[0].rate: "0/s": invalid rate: count 0 must be positive
	// rules[0].policies[1]: invalid policy: fixed_window: window 0s must be positive
}

// A refusal written without allocating, as a server writing into its own
// buffers would: the header values and the problem body land in reused
// buffers.
func ExampleResult_AppendRefusal() {
	store, err := memory.New(memory.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	engine, err := rules.New(rules.Config{Rules: []rules.Rule{{
		Name:     "per-ip",
		Policies: []rules.Policy{{Rate: "1/h", Burst: 1}},
	}}}, store)
	if err != nil {
		log.Fatal(err)
	}
	r := request{method: "GET", path: "/items", remote: netip.MustParseAddrPort("192.0.2.1:50000")}
	engine.Decide(context.Background(), r)
	res, _ := engine.Decide(context.Background(), r)

	var fields [10]rules.RawHeader
	var values, body [512]byte
	hs, vals := res.AppendRawHeaders(fields[:0], values[:0])
	for _, h := range hs {
		v := h.Value
		if h.End > 0 {
			v = string(vals[h.Start:h.End])
		}
		fmt.Printf("%s: %s\n", h.Name, v)
	}
	ref := res.AppendRefusal(body[:0])
	fmt.Println(ref.Status, ref.ContentType)
	fmt.Printf("%s", ref.Body)
	// Output:
	// Ratelimit-Policy: "per-ip";q=1;w=3600
	// Ratelimit: "per-ip";r=0;t=3600
	// Retry-After: 3600
	// Cache-Control: no-store
	// 429 application/problem+json
	// {"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"Rate limit exceeded; retry in 3600 seconds.","instance":"/items","retry-after":3600,"violated-policies":["per-ip"]}
}
