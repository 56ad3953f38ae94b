package envoyrls

import (
	"context"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tollgate-dev/tollgate/store/memory"
)

// rawCodec sends bytes as they are, to put malformed messages on the wire.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error)      { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error { *(v.(*[]byte)) = data; return nil }
func (rawCodec) Name() string                       { return "proto" }

// newBadInputService is the e2e service with metrics on reg.
func newBadInputService(t *testing.T, reg *prometheus.Registry) *Service {
	t.Helper()
	var now atomic.Int64
	now.Store(e2eStart.UnixNano())
	st, err := memory.New(memory.Config{Clock: now.Load, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m, err := NewMetrics(reg, 0)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(Config{Store: st, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	svc.SetLimits(mustBuild(t, Source{Name: "edge.yaml", Data: []byte(e2eConfig)}))
	return svc
}

// countersTouched is the number of decision counters above zero in reg.
func countersTouched(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if m.GetCounter().GetValue() > 0 && !strings.Contains(mf.GetName(), "config_loads") {
				n++
			}
		}
	}
	return n
}

// Bad requests are refused with InvalidArgument before any counter, in
// the store or in the metrics, moves.
func TestBadRequestsAreInvalidArgumentAndCountNothing(t *testing.T) {
	reg := prometheus.NewRegistry()
	svc := newBadInputService(t, reg)
	client1 := desc("remote_address", "10.0.0.1")
	many := make([]*rlv3.RateLimitDescriptor, 10000)
	for i := range many {
		many[i] = client1
	}
	huge := desc("remote_address", "10.0.0.1")
	huge.HitsAddend = wrapperspb.UInt64(math.MaxUint64)
	big := desc("remote_address", "10.0.0.1")
	big.HitsAddend = wrapperspb.UInt64(math.MaxUint32 + 1)
	longEntries := &rlv3.RateLimitDescriptor{}
	for range 100 {
		longEntries.Entries = append(longEntries.Entries, &rlv3.RateLimitDescriptor_Entry{Key: "k", Value: "v"})
	}
	badOverride := desc("remote_address", "10.0.0.1")
	badOverride.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: 99}
	for name, req := range map[string]*rlsv3.RateLimitRequest{
		"10,000 descriptors":     {Domain: "edge", Descriptors: many},
		"1 MB domain":            {Domain: strings.Repeat("d", 1<<20), Descriptors: []*rlv3.RateLimitDescriptor{client1}},
		"invalid UTF-8 value":    {Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{client1, desc("remote_address", "\xff\xfe")}},
		"invalid UTF-8 key":      {Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{client1, desc("\xc3", "x")}},
		"hits_addend 2^64-1":     {Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{client1, huge}},
		"hits_addend 2^32":       {Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{client1, big}},
		"100 entries":            {Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{client1, longEntries}},
		"override without unit":  {Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{client1, badOverride}},
		"empty domain":           {Descriptors: []*rlv3.RateLimitDescriptor{client1}},
		"no descriptors":         {Domain: "edge"},
		"nil descriptor present": {Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{}},
	} {
		_, err := svc.ShouldRateLimit(context.Background(), req)
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
	if n := countersTouched(t, reg); n != 0 {
		t.Errorf("%d counter series touched by refused requests", n)
	}
	resp, err := svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{client1}})
	if err != nil || resp.GetStatuses()[0].GetLimitRemaining() != 2 {
		t.Fatalf("first valid request: %v %v, want remaining 2 (nothing charged before)", resp, err)
	}
	if countersTouched(t, reg) == 0 {
		t.Fatal("a valid request touched no counter: the check above proves nothing")
	}
}

// Malformed protobuf and invalid UTF-8 on the wire get a gRPC status
// from the server's decoding (Internal) and count nothing; the server
// keeps serving.
func TestMalformedProtobufOnTheWireIsAStatus(t *testing.T) {
	reg := prometheus.NewRegistry()
	svc := newBadInputService(t, reg)
	client, conn := startGRPC(t, svc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for name, msg := range map[string][]byte{
		"truncated":     {0x0a, 0x05, 'e'},
		"bad wire type": {0x0f, 0xff, 0xff},
		// domain "edge", descriptor with entry key "k" value "\xff".
		"invalid UTF-8": {0x0a, 0x04, 'e', 'd', 'g', 'e', 0x12, 0x0a, 0x0a, 0x08, 0x0a, 0x01, 'k', 0x12, 0x03, 0xff, 0xfe, 0xfd},
	} {
		var out []byte
		err := conn.Invoke(ctx, "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit", &msg, &out, grpc.ForceCodec(rawCodec{}))
		if c := status.Code(err); c != codes.Internal && c != codes.InvalidArgument {
			t.Errorf("%s: %v, want a decoding status", name, err)
		}
	}
	if n := countersTouched(t, reg); n != 0 {
		t.Errorf("%d counter series touched", n)
	}
	if _, err := client.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{desc("a", "b")}}); err != nil {
		t.Fatalf("server stopped serving: %v", err)
	}
}
