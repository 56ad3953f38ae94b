package rules

import (
	"context"
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
