// Package limittest holds tollgate's conformance vectors: step tables of
// (time, cost → allowed, remaining, retry-after, reset-after, next unit,
// delay) for every algorithm, including the worked examples of the design
// documents (a token bucket of capacity 10 refilling 2/s; the sliding
// counter's 30 + 50·0.6 = 60 under 100; the fixed window's 2× seam burst;
// nginx rate=10r/s burst=5 with default, nodelay and delay=3).
//
// Every store runs the same tables through Run, like testing/fstest: the
// pure algorithms, the memory store and the Redis store must agree step by
// step. All times and parameters are whole microseconds, so a store that
// computes in microseconds (the Redis wire) can agree exactly; such a store
// passes Options.Resolution so durations are compared at that resolution.
package limittest
