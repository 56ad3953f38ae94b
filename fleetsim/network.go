package fleetsim

import "container/heap"

// The network model: each node does its periodic work (a gossip round,
// an eventual sync) every Interval at its own phase, drawn at random in
// [0, Interval) as real nodes' timers fall; a gossip message reaches
// another node Latency after it is sent, unless lost (with probability
// Loss, drawn per message and recipient); an eventual sync is lost
// whole with probability Loss.

// tickEvent is a node's next periodic work in one tier.
type tickEvent struct {
	at   int64
	tier int32
	node int32
}

// tickHeap orders tick events by time (then tier and node, so that runs
// are reproducible).
type tickHeap []tickEvent

func (h tickHeap) Len() int { return len(h) }
func (h tickHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.at != b.at {
		return a.at < b.at
	}
	if a.tier != b.tier {
		return a.tier < b.tier
	}
	return a.node < b.node
}
func (h tickHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *tickHeap) Push(x any)   { *h = append(*h, x.(tickEvent)) }
func (h *tickHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

var _ heap.Interface = (*tickHeap)(nil)

// nextTick returns the first instant after now on the grid phase +
// k × interval.
func nextTick(now, phase, interval int64) int64 {
	if now < phase {
		return phase
	}
	return phase + ((now-phase)/interval+1)*interval
}

// lossDraw returns a number in [0, 1) drawn from (seed, a, b): whether
// message a is lost on its way to b is lossDraw(seed, a, b) < Loss.
func lossDraw(seed, a, b uint64) float64 {
	return float64(mix(seed^mix(a^mix(b+0x9e3779b97f4a7c15)))>>11) / (1 << 53)
}
