// Package limit holds tollgate's rate-limiting algorithms as pure, exact,
// integer state transitions, and the types every store and adapter shares.
//
// An algorithm is a function
//
//	decide(policy, state, now, cost) -> (newState, Decision)
//
// with no I/O, no locks, no clock reads and no allocation. Time is a
// parameter: Unix nanoseconds (int64). A refused request leaves the state
// unchanged. Every state knows the instant it becomes idle (State.Idle): from
// then on it is indistinguishable from an absent key, so a store may drop it
// without changing any later decision.
//
// The five algorithms are [FixedWindow], [SlidingLog], [SlidingWindow],
// [TokenBucket] (GCRA) and [LeakyBucket] (nginx limit_req semantics,
// policing or shaping). All but the sliding log keep a fixed-size [State] of
// three integers and implement [Stateful]; the sliding log keeps a [Log] and
// implements [Logged].
//
// Stores ([Store]) apply a policy to a key atomically; package
// store/memory is the in-process one. Several policies on one request are
// applied with [Store.ApplyAll]: all must allow, nothing is charged when any
// refuses, and the reported decision is the most restrictive ([Merge]).
//
// This package imports only the standard library.
package limit
