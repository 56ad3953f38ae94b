package fleetsim

// tierSim is one tier's simulated fleet: the tier's own stores, one per
// node (or one central one), on the fleet's virtual clock.
type tierSim interface {
	// decide applies a request of cost on key (id k) that reached node
	// at the fleet's current time. It reports whether it was admitted,
	// and whether the node now needs its periodic work (tick).
	decide(node int, k int32, key string, cost int64) (allowed, tick bool, err error)
	// tick runs the node's periodic work (a gossip round, an eventual
	// sync) at the fleet's current time; it reports whether the node
	// still has periodic work to do.
	tick(node int) bool
	// traffic returns the messages and bytes sent so far, the whole
	// fleet's, and whether the bytes are an estimate.
	traffic() (msgs, bytes int64, estimated bool)
	close()
}
