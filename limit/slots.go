package limit

import "context"

// Lease identifies one slot Slots.Acquire took, for its Release.
type Lease uint64

// Slots caps what a key has in flight: a concurrency limit (nginx's
// limit_conn) rather than a rate. Acquire takes one of max slots of a
// key; Release gives it back. Implementations are safe for concurrent
// use; keys are namespaced by the caller, as Store's.
type Slots interface {
	// Acquire takes a slot of key if fewer than max are held. Slot.OK is
	// false (and nothing is held) when all max are taken.
	Acquire(ctx context.Context, key string, max int64) (Slot, error)
	// Release gives back the slot of key that lease names. Releasing a
	// slot twice, or one that expired, does nothing.
	Release(ctx context.Context, key string, lease Lease) error
}

// Slot is the outcome of Slots.Acquire.
type Slot struct {
	// OK reports whether a slot was taken.
	OK bool
	// Lease names the slot for Release; zero when not OK.
	Lease Lease
	// Held is how many slots of the key are held, this one included when
	// OK.
	Held int64
}
