package fleetsim

import (
	"math/rand/v2"
	"slices"
)

// router picks the node a request goes to.
type router struct {
	kind  Routing
	nodes int
	next  int        // round robin
	rng   *rand.Rand // random
	cum   []float64  // regional: cumulative weights, the last 1
	seed  uint64
}

func newRouter(c *Config) *router {
	r := &router{kind: c.Routing, nodes: c.Nodes, seed: c.Seed,
		rng: rand.New(rand.NewPCG(c.Seed, 0x726f757465))}
	if r.kind == Regional {
		sum := 0.0
		for i := range c.Nodes {
			sum += c.Weights[i%len(c.Weights)]
			r.cum = append(r.cum, sum)
		}
		for i := range r.cum {
			r.cum[i] /= sum
		}
	}
	return r
}

// route returns the node for a request on key.
func (r *router) route(key string) int {
	switch r.kind {
	case RoundRobin:
		n := r.next
		r.next = (r.next + 1) % r.nodes
		return n
	case Random:
		return r.rng.IntN(r.nodes)
	case Regional:
		// The key's hash as a point in [0, 1): each node owns a span
		// as wide as its weight.
		u := float64(hashKey(key, r.seed)>>11) / (1 << 53)
		i, _ := slices.BinarySearch(r.cum, u)
		return min(i, r.nodes-1)
	}
	return int(hashKey(key, r.seed) % uint64(r.nodes))
}

// hashKey is FNV-1a over key, mixed with seed: stable across runs, so
// that a fleet's routing is reproducible.
func hashKey(key string, seed uint64) uint64 {
	h := uint64(14695981039346656037) ^ seed
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	return mix(h)
}

// mix is splitmix64's finalizer: a well-spread 64-bit hash of x.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
