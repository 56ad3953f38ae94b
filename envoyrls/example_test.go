package envoyrls_test

import (
	"context"
	"fmt"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/tollgate-dev/tollgate/envoyrls"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// A service answering what Envoy's ratelimit filter asks, from an
// envoyproxy/ratelimit configuration file. Register it on a grpc.Server
// to serve it.
func Example() {
	limits, err := envoyrls.Build([]envoyrls.Source{{Name: "edge.yaml", Data: []byte(`
domain: edge
descriptors:
  - key: remote_address
    rate_limit:
      unit: hour
      requests_per_unit: 2
`)}})
	if err != nil {
		fmt.Println(err)
		return
	}
	st, _ := memory.New(memory.Config{})
	defer st.Close()
	svc, _ := envoyrls.New(envoyrls.Config{Store: st, Headers: envoyrls.HeadersNone})
	svc.SetLimits(limits)

	req := &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{
		{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "192.0.2.7"}}},
	}}
	for range 3 {
		resp, _ := svc.ShouldRateLimit(context.Background(), req)
		fmt.Println(resp.GetOverallCode(), resp.GetStatuses()[0].GetLimitRemaining())
	}
	// Output:
	// OK 1
	// OK 0
	// OVER_LIMIT 0
}
