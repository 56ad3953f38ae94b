package rules

import (
	"context"
	"net/netip"
	"testing"
)

// BenchmarkDecideIP is the engine's allowed path for one rule keyed by IP,
// over store/memory.
func BenchmarkDecideIP(b *testing.B) {
	e, _ := newEngine(b, Config{Rules: []Rule{{Name: "per-ip", Policies: []Policy{{Rate: "1000000000/s"}}}}})
	r := get("/items/1", "192.0.2.1")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if res, _ := e.Decide(ctx, r); res.Outcome != Allowed {
			b.Fatal(res.Outcome)
		}
	}
}

// BenchmarkDecideIPHeaders adds the draft-10 header values.
func BenchmarkDecideIPHeaders(b *testing.B) {
	e, _ := newEngine(b, Config{Rules: []Rule{{Name: "per-ip", Policies: []Policy{{Rate: "1000000000/s"}}}}})
	r := get("/items/1", "192.0.2.1")
	ctx := context.Background()
	var buf [8]Header
	b.ReportAllocs()
	for b.Loop() {
		res, _ := e.Decide(ctx, r)
		res.AppendHeaders(buf[:0])
	}
}

// BenchmarkStoreApply is the store alone, for reference.
func BenchmarkStoreApply(b *testing.B) {
	e, _ := newEngine(b, Config{Rules: []Rule{{Name: "per-ip", Policies: []Policy{{Rate: "1000000000/s"}}}}})
	p := e.enforced[0].policies[0]
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		e.store.Apply(ctx, p.keyPrefix+"192.0.2.1", p.policy, 1)
	}
}

func BenchmarkAppendHeaders(b *testing.B) {
	e, _ := newEngine(b, Config{Rules: []Rule{{Name: "per-ip", Policies: []Policy{{Rate: "1000000000/s"}}}}})
	res, _ := e.Decide(context.Background(), get("/items/1", "192.0.2.1"))
	var buf [8]Header
	b.ReportAllocs()
	for b.Loop() {
		res.AppendHeaders(buf[:0])
	}
}

// BenchmarkDecideIPNoKeyCache builds the key string every time instead
// of interning it, for comparison.
func BenchmarkDecideIPNoKeyCache(b *testing.B) {
	e, _ := newEngine(b, Config{KeyCache: -1, Rules: []Rule{{Name: "per-ip", Policies: []Policy{{Rate: "1000000000/s"}}}}})
	r := get("/items/1", "192.0.2.1")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		e.Decide(ctx, r)
	}
}

// refusedResult is a refusal of GET /items/42 by a per-IP token bucket.
func refusedResult(b *testing.B) Result {
	e, _ := newEngine(b, Config{Rules: []Rule{{Name: "per-ip", Policies: []Policy{{Rate: "1/h"}}}}})
	decide(b, e, get("/items/42", "192.0.2.1"))
	return decide(b, e, get("/items/42", "192.0.2.1"))
}

// BenchmarkRefusal is the refusal body in a new buffer.
func BenchmarkRefusal(b *testing.B) {
	res := refusedResult(b)
	b.ReportAllocs()
	for b.Loop() {
		res.Refusal()
	}
}

// BenchmarkAppendRefusal is the refusal body in a reused buffer.
func BenchmarkAppendRefusal(b *testing.B) {
	res := refusedResult(b)
	var buf [512]byte
	b.ReportAllocs()
	for b.Loop() {
		res.AppendRefusal(buf[:0])
	}
}

// BenchmarkRefusalReference is the body built entirely per request, as
// before the fixed parts were compiled, for comparison.
func BenchmarkRefusalReference(b *testing.B) {
	res := refusedResult(b)
	b.ReportAllocs()
	for b.Loop() {
		res.refusalReference()
	}
}

// BenchmarkAppendRawHeaders is AppendHeaders with the values left in a
// reused buffer.
func BenchmarkAppendRawHeaders(b *testing.B) {
	e, _ := newEngine(b, Config{Rules: []Rule{{Name: "per-ip", Policies: []Policy{{Rate: "1000000000/s"}}}}})
	res, _ := e.Decide(context.Background(), get("/items/1", "192.0.2.1"))
	var hs [10]RawHeader
	var buf [128]byte
	b.ReportAllocs()
	for b.Loop() {
		res.AppendRawHeaders(hs[:0], buf[:0])
	}
}

// BenchmarkDecideIPHotParallel is one client's key decided on every core
// at once: the hot-key case, where shared locks on the path show.
func BenchmarkDecideIPHotParallel(b *testing.B) {
	e, _ := newEngine(b, Config{Rules: []Rule{{Name: "per-ip", Policies: []Policy{{Rate: "1000000000/s"}}}}})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := get("/items/1", "192.0.2.1")
		for pb.Next() {
			e.Decide(ctx, r)
		}
	})
}

// BenchmarkKeyCacheHotParallel is the key cache alone, one key on every
// core at once.
func BenchmarkKeyCacheHotParallel(b *testing.B) {
	c := newKeyCache(65536)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		k := []byte("per-ip\x1fper-ip\x1ftoken_bucket\x1f192.0.2.1")
		for pb.Next() {
			c.intern(k)
		}
	})
}

// BenchmarkDecideManyClients cycles through 200,000 client addresses,
// more than the key cache holds: the cache's miss path.
func BenchmarkDecideManyClients(b *testing.B) {
	e, _ := newEngine(b, Config{Rules: []Rule{{Name: "per-ip", Policies: []Policy{{Rate: "1000000000/s"}}}}})
	ctx := context.Background()
	reqs := make([]*req, 200_000)
	for i := range reqs {
		reqs[i] = get("/items/1", netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).String())
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		e.Decide(ctx, reqs[i])
		if i++; i == len(reqs) {
			i = 0
		}
	}
}
