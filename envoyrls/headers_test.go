package envoyrls

import (
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// The headers are the one writer's (rules.FieldWriter) in envoy-rls's
// modes, byte for byte what envoy-rls wrote with its own writer (the
// upstream's spellings, its configurable trio names, every descriptor
// in RateLimit), in one allocation for a few descriptors.
func TestHeadersBytesAndAllocs(t *testing.T) {
	minute := &Limit{Name: "per_minute", RequestsPerUnit: 10, Unit: rlsv3.RateLimitResponse_RateLimit_MINUTE}
	hour := &Limit{RequestsPerUnit: 1000, Unit: rlsv3.RateLimitResponse_RateLimit_HOUR}
	hour.Path = "d.k_v"
	build := func(limits ...*Limit) *headerBuilder {
		var h headerBuilder
		for i, l := range limits {
			st := &rlsv3.RateLimitResponse_DescriptorStatus{LimitRemaining: uint32(7 - 3*i)}
			h.add(l, st, time.Duration(i+1)*1500*time.Millisecond, false)
		}
		return &h
	}
	legacy := &Config{Headers: HeadersLegacy, LimitHeader: "RateLimit-Limit", RemainingHeader: "RateLimit-Remaining", ResetHeader: "X-Reset"}
	draft10 := &Config{Headers: HeadersDraft10}
	for _, c := range []struct {
		name string
		cfg  *Config
		h    *headerBuilder
		want []string
	}{
		{"legacy, one", legacy, build(minute), []string{"RateLimit-Limit", "10", "RateLimit-Remaining", "7", "X-Reset", "2"}},
		{"legacy, two: the least remaining", legacy, build(minute, hour), []string{"RateLimit-Limit", "1000", "RateLimit-Remaining", "4", "X-Reset", "3"}},
		{"draft10, one", draft10, build(minute), []string{"RateLimit-Policy", `"per_minute";q=10;w=60`, "RateLimit", `"per_minute";r=7;t=2`}},
		{"draft10, two", draft10, build(minute, hour), []string{
			"RateLimit-Policy", `"per_minute";q=10;w=60, "d.k_v";q=1000;w=3600`,
			"RateLimit", `"per_minute";r=7;t=2, "d.k_v";r=4;t=3`}},
	} {
		hv := c.h.headers(c.cfg)
		var got []string
		for _, v := range hv {
			got = append(got, v.GetKey(), v.GetValue())
		}
		if len(got) != len(c.want) {
			t.Fatalf("%s: %q, want %q", c.name, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Fatalf("%s: %q, want %q", c.name, got, c.want)
			}
		}
		if n := testing.AllocsPerRun(100, func() { c.h.headers(c.cfg) }); n != 1 {
			t.Errorf("%s: %v allocations, want 1", c.name, n)
		}
	}
}
