package limit

import (
	"context"
	"errors"
)

// Request is one policy applied to one key with a cost, an element of
// Store.ApplyAll. Keys are namespaced by the caller: two different policies
// must not share a key.
type Request struct {
	Key    string
	Policy Policy
	Cost   int64
}

// Store applies policies to keys atomically. Implementations take the time
// from their own configured clock, and never implement an algorithm
// differently from this package.
type Store interface {
	// Apply charges cost against key under p and returns the decision.
	Apply(ctx context.Context, key string, p Policy, cost int64) (Decision, error)
	// ApplyAll applies several requests as one: allowed only if every one
	// allows; when any refuses, none is charged. The decision returned is
	// the Merge of all of them, with Index naming the most restrictive.
	// An empty list is allowed with a zero decision otherwise.
	ApplyAll(ctx context.Context, reqs []Request) (Decision, error)
}

// EachApplier is implemented by a Store that can decide several
// independent requests at once: each is charged on its own, exactly as
// Apply would charge it (unlike ApplyAll, one refusal does not hold back
// the others), in one round trip where the store makes round trips. A
// caller deciding a batch uses it when the Store has it, and calls Apply
// for each request otherwise.
type EachApplier interface {
	// ApplyEach decides reqs in order into out, which holds at least
	// len(reqs) decisions. An error (a negative cost, an invalid policy,
	// a context that ended) leaves out undefined.
	ApplyEach(ctx context.Context, reqs []Request, out []Decision) error
}

// ErrNegativeCost reports a request with a cost below zero.
var ErrNegativeCost = errors.New("negative cost")

// ErrFull reports a new key that a bounded store had no room for without
// forgetting a key being limited (which would hand that client a fresh
// allowance). Nothing is charged. It is not a failure of the store that a
// failure mode can answer by allowing: the rules engine refuses such a
// request whatever its on_error, as nginx's limit_req answers 503 when its
// zone has no room.
var ErrFull = errors.New("no room for a new key: every key that could be forgotten is being limited")
