package limit

import "time"

// Never is the RetryAfter of a request that can never be allowed: its cost
// exceeds the policy's capacity. It is the largest time.Duration.
const Never = time.Duration(1<<63 - 1)

// Decision is the outcome of applying a policy to a request.
//
// All durations are measured from the instant of the decision. The zero
// Decision refuses with nothing to say; stores always fill every field.
type Decision struct {
	// Allowed reports whether the request may proceed (possibly after Delay).
	Allowed bool
	// Limit is the capacity: the most cost the policy admits at once from an
	// idle key (the limit of a window, the burst of a token bucket, burst+1
	// for a leaky bucket).
	Limit int64
	// Remaining is how much more cost would be admitted right now, after
	// this request was charged (or not, if refused). Never negative.
	Remaining int64
	// ResetAfter is the time until the key is back to its full allowance
	// if nothing else arrives. Zero for an idle key.
	ResetAfter time.Duration
	// NextUnitAfter is, when Remaining is zero, the time until one unit of
	// cost is admitted again if nothing else arrives: the RetryAfter a
	// request of cost 1 would be given now. Zero when Remaining is
	// positive. A client pacing itself waits this long after the last
	// unit, not ResetAfter (a token bucket's whole refill).
	NextUnitAfter time.Duration
	// RetryAfter is zero when allowed. When refused it is the time until
	// this same request would be allowed if nothing else arrives, or Never
	// when its cost exceeds the capacity.
	RetryAfter time.Duration
	// Delay is, for a shaping leaky bucket, how long an allowed request
	// should wait before it is served. Zero otherwise.
	Delay time.Duration
	// IdleAt is the instant (Unix ns) from which the key's state is
	// equivalent to an absent key; stores may drop it then. Zero when the
	// state is already idle.
	IdleAt int64
	// Policy is the policy that produced this decision. Stores set it; the
	// pure algorithms leave it nil. After a merge it is the most
	// restrictive policy's.
	Policy Policy
	// Index is, after ApplyAll, the position of Policy in the request list.
	Index int
}

// Merge combines the decisions of several policies applied to one request
// into the one to report: allowed only if both are; the most restrictive
// one (a refusal over an allowance, then the longer RetryAfter, then the
// smaller Remaining, then the longer NextUnitAfter, then the longer
// ResetAfter); and the longer Delay of the two. Merge of a zero Decision
// and d is not d: start from the first.
func Merge(a, b Decision) Decision {
	out := a
	if moreRestrictive(b, a) {
		out = b
	}
	out.Delay = max(a.Delay, b.Delay)
	out.Allowed = a.Allowed && b.Allowed
	return out
}

func moreRestrictive(b, a Decision) bool {
	if a.Allowed != b.Allowed {
		return !b.Allowed
	}
	if b.RetryAfter != a.RetryAfter {
		return b.RetryAfter > a.RetryAfter
	}
	if b.Remaining != a.Remaining {
		return b.Remaining < a.Remaining
	}
	if b.NextUnitAfter != a.NextUnitAfter {
		return b.NextUnitAfter > a.NextUnitAfter
	}
	return b.ResetAfter > a.ResetAfter
}
