package envoyrls

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/protobuf/proto"
)

// The codec's bytes are gRPC's proto codec's, for real responses: one
// status and several, headers, over the limit, unlimited, unmatched.
func TestServerCodecMarshalsAsProto(t *testing.T) {
	svc := newRedisLessService(t)
	c := vtCodec{proto: encoding.GetCodecV2(grpcproto.Name)}
	reqs := benchRequests(3)[:2]
	reqs = append(reqs, &rlsv3.RateLimitRequest{Domain: "bench", Descriptors: reqs[0].Descriptors[:1]},
		&rlsv3.RateLimitRequest{Domain: "nope", Descriptors: reqs[0].Descriptors})
	for i, req := range reqs {
		resp, err := svc.ShouldRateLimit(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		resp.ResponseHeadersToAdd = append(resp.ResponseHeadersToAdd, resp.ResponseHeadersToAdd...)
		got, err := c.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		want, err := c.proto.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Materialize(), want.Materialize()) {
			t.Errorf("response %d: vtproto's bytes differ from proto's", i)
		}
		var back rlsv3.RateLimitResponse
		if err := c.Unmarshal(got, &back); err != nil || !proto.Equal(&back, resp) {
			t.Errorf("response %d: does not read back: %v", i, err)
		}
	}
}

func newRedisLessService(t *testing.T) *Service {
	t.Helper()
	svc := newTestService(t, Config{Headers: HeadersLegacy}, benchConfig, new(atomic.Int64))
	return svc
}
