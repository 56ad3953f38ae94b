package limittest

import (
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// Base is the instant every case starts at: 2026-01-01T00:00:00Z, aligned
// to every window the cases use.
var Base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// Case is one key (or one key per policy) driven through a list of steps.
type Case struct {
	Name string
	// Policies apply to the request together (Store.ApplyAll) when there
	// are several; each has its own key.
	Policies []limit.Policy
	Steps    []Step
}

// Step is one request: at Base+At, of Cost, expecting Want.
type Step struct {
	At   time.Duration
	Cost int64
	// Only, when positive, applies just policy Only-1 of the case, alone
	// (Store.Apply): a way to look at one key of a multi-policy case.
	Only int
	Want Want
}

// Want is the expected decision.
type Want struct {
	Allowed    bool
	Limit      int64
	Remaining  int64
	RetryAfter time.Duration
	ResetAfter time.Duration
	// NextUnitAfter is set with spent: zero unless Remaining is.
	NextUnitAfter time.Duration
	Delay         time.Duration
	// Index is, for a multi-policy step, the most restrictive policy.
	Index int
}

const (
	ms = time.Millisecond
	s  = time.Second
)

func allow(limit, remaining int64, reset time.Duration) Want {
	return Want{Allowed: true, Limit: limit, Remaining: remaining, ResetAfter: reset}
}

func refuse(limit, remaining int64, retry, reset time.Duration) Want {
	return Want{Limit: limit, Remaining: remaining, RetryAfter: retry, ResetAfter: reset}
}

func delayed(w Want, d time.Duration) Want { w.Delay = d; return w }

// spent is w, which has nothing left, with one unit back after next.
func spent(w Want, next time.Duration) Want { w.NextUnitAfter = next; return w }

func indexed(w Want, i int) Want { w.Index = i; return w }

// Cases returns the conformance vectors. Every expected value was worked
// out by hand from the algorithm's definition; the comments show the sums.
func Cases() []Case {
	nginx := func(mode limit.LeakMode, delay int64) []limit.Policy {
		return []limit.Policy{limit.LeakyBucket{Rate: limit.Per(10, s), Burst: 5, Mode: mode, Delay: delay}}
	}
	return []Case{
		{
			// Capacity 10, 2 tokens/s: T = 500ms, τ = 5s.
			Name:     "token_bucket/capacity10_refill2ps",
			Policies: []limit.Policy{limit.TokenBucket{Rate: limit.Per(2, s), Burst: 10}},
			Steps: []Step{
				{At: 0, Cost: 1, Want: allow(10, 9, 500*ms)},
				// Nothing left: the next token is one interval away, the whole
				// bucket τ away.
				{At: 0, Cost: 9, Want: spent(allow(10, 0, 5*s), 500*ms)},
				{At: 0, Cost: 1, Want: spent(refuse(10, 0, 500*ms, 5*s), 500*ms)},
				{At: 500 * ms, Cost: 1, Want: spent(allow(10, 0, 5*s), 500*ms)},
				// TAT 5.5s; cost 2 would need TAT−τ = 1.5s: wait 0.5s; 1 token now.
				{At: 1 * s, Cost: 2, Want: refuse(10, 1, 500*ms, 4500*ms)},
				{At: 1 * s, Cost: 1, Want: spent(allow(10, 0, 5*s), 500*ms)},
				// TAT 6s: at 3s, (5s − 3s)/0.5s = 4 tokens; a peek charges nothing.
				{At: 3 * s, Cost: 0, Want: allow(10, 4, 3*s)},
				{At: 3 * s, Cost: 0, Want: allow(10, 4, 3*s)},
				{At: 3 * s, Cost: 11, Want: refuse(10, 4, limit.Never, 3*s)},
				{At: 10 * s, Cost: 1, Want: allow(10, 9, 500*ms)},
			},
		},
		{
			Name:     "token_bucket/5_per_250ms",
			Policies: []limit.Policy{limit.TokenBucket{Rate: limit.Per(5, 250*ms)}},
			Steps: []Step{
				{At: 0, Cost: 5, Want: spent(allow(5, 0, 250*ms), 50*ms)},
				{At: 0, Cost: 1, Want: spent(refuse(5, 0, 50*ms, 250*ms), 50*ms)},
				{At: 50 * ms, Cost: 1, Want: spent(allow(5, 0, 250*ms), 50*ms)},
			},
		},
		{
			// The clock goes back 5s: no refill, no panic.
			Name:     "token_bucket/clock_backwards",
			Policies: []limit.Policy{limit.TokenBucket{Rate: limit.Per(1, s), Burst: 2}},
			Steps: []Step{
				{At: 10 * s, Cost: 1, Want: allow(2, 1, 1*s)},
				{At: 5 * s, Cost: 1, Want: spent(refuse(2, 0, 5*s, 6*s), 5*s)},
			},
		},
		{
			// The seam: 10 at the end of one window, 10 more a second later.
			Name:     "fixed_window/seam_burst",
			Policies: []limit.Policy{limit.FixedWindow{Limit: 10, Window: time.Minute}},
			Steps: []Step{
				{At: 59 * s, Cost: 10, Want: spent(allow(10, 0, 1*s), 1*s)},
				{At: 59500 * ms, Cost: 1, Want: spent(refuse(10, 0, 500*ms, 500*ms), 500*ms)},
				{At: 60 * s, Cost: 10, Want: spent(allow(10, 0, 60*s), 60*s)},
				{At: 60 * s, Cost: 11, Want: spent(refuse(10, 0, limit.Never, 60*s), 60*s)},
				{At: 119999 * ms, Cost: 0, Want: spent(allow(10, 0, 1*ms), 1*ms)},
				{At: 120 * s, Cost: 0, Want: allow(10, 10, 0)},
			},
		},
		{
			// 7 per 90s: windows of 90s from the epoch (Base is aligned).
			Name:     "fixed_window/7_per_90s",
			Policies: []limit.Policy{limit.FixedWindow{Limit: 7, Window: 90 * s}},
			Steps: []Step{
				{At: 89 * s, Cost: 7, Want: spent(allow(7, 0, 1*s), 1*s)},
				{At: 90 * s, Cost: 7, Want: spent(allow(7, 0, 90*s), 90*s)},
				{At: 100 * s, Cost: 1, Want: spent(refuse(7, 0, 80*s, 80*s), 80*s)},
			},
		},
		{
			// The clock goes back into the previous window: stay in the later one.
			Name:     "fixed_window/clock_backwards",
			Policies: []limit.Policy{limit.FixedWindow{Limit: 2, Window: time.Minute}},
			Steps: []Step{
				{At: 70 * s, Cost: 1, Want: allow(2, 1, 50*s)},
				{At: 50 * s, Cost: 1, Want: spent(allow(2, 0, 70*s), 70*s)},
			},
		},
		{
			// 50 in the previous minute, 30 in this one, 24s in:
			// 30 + 50·0.6 = 60 < 100.
			Name:     "sliding_window/seed_example",
			Policies: []limit.Policy{limit.SlidingWindow{Limit: 100, Window: time.Minute}},
			Steps: []Step{
				{At: 0, Cost: 50, Want: allow(100, 50, 120*s)},
				// New window: estimate 50·1 + 0; remaining 100 − 30 − 50 = 20.
				{At: 60 * s, Cost: 30, Want: allow(100, 20, 120*s)},
				// Estimate 50·(36/60) + 30 = 60: allowed; then 100 − 31 − 30 = 39.
				{At: 84 * s, Cost: 1, Want: allow(100, 39, 96*s)},
				// Cost 41: 60+1+41−1 = 101 ≥ 100. Passes once 50·(60−e)/60 < 29,
				// e > 25.2s: 1.2s and a tick later.
				{At: 84 * s, Cost: 41, Want: refuse(100, 39, 1200*ms+1, 96*s)},
			},
		},
		{
			Name:     "sliding_window/retry_into_next_window",
			Policies: []limit.Policy{limit.SlidingWindow{Limit: 10, Window: 10 * s}},
			Steps: []Step{
				// Nothing left until prev's weight 10·(10s−e)/10s < 10, just after 10s.
				{At: 0, Cost: 10, Want: spent(allow(10, 0, 20*s), 10*s+1)},
				// Full until prev's weight 10·(10s−e)/10s < 10: just after 10s.
				{At: 5 * s, Cost: 1, Want: spent(refuse(10, 0, 5*s+1, 15*s), 5*s+1)},
				// Window 1, 5s in: 10·0.5 + 0 = 5; after: 10 − 1 − 5 = 4.
				{At: 15 * s, Cost: 1, Want: allow(10, 4, 15*s)},
				{At: 15 * s, Cost: 5, Want: refuse(10, 4, 1, 15*s)},
				// 6 + 10·(4s/10s) = 10: full, but the estimate falls from the next
				// instant on.
				{At: 16 * s, Cost: 5, Want: spent(allow(10, 0, 14*s), 1)},
			},
		},
		{
			Name:     "sliding_log/exact",
			Policies: []limit.Policy{limit.SlidingLog{Limit: 3, Window: 10 * s}},
			Steps: []Step{
				{At: 0, Cost: 1, Want: allow(3, 2, 10*s)},
				{At: 1 * s, Cost: 1, Want: allow(3, 1, 10*s)},
				// Full: the request at 0 leaves the window at 10s.
				{At: 2 * s, Cost: 1, Want: spent(allow(3, 0, 10*s), 8*s)},
				// The request at 0 leaves the window at 10s.
				{At: 5 * s, Cost: 1, Want: spent(refuse(3, 0, 5*s, 7*s), 5*s)},
				{At: 10 * s, Cost: 1, Want: spent(allow(3, 0, 10*s), 1*s)},
				// Cost 2 needs the entries of 1s and 2s gone: at 12s.
				{At: 10 * s, Cost: 2, Want: spent(refuse(3, 0, 2*s, 10*s), 1*s)},
				{At: 10 * s, Cost: 4, Want: spent(refuse(3, 0, limit.Never, 10*s), 1*s)},
				{At: 12 * s, Cost: 2, Want: spent(allow(3, 0, 10*s), 8*s)},
				{At: 30 * s, Cost: 0, Want: allow(3, 3, 0)},
			},
		},
		{
			// nginx limit_req rate=10r/s burst=5: seven requests at once.
			Name:     "leaky_bucket/nginx_default",
			Policies: nginx(limit.Shape, 0),
			Steps: []Step{
				{At: 0, Cost: 1, Want: allow(6, 5, 100*ms)},
				{At: 0, Cost: 1, Want: delayed(allow(6, 4, 200*ms), 100*ms)},
				{At: 0, Cost: 1, Want: delayed(allow(6, 3, 300*ms), 200*ms)},
				{At: 0, Cost: 1, Want: delayed(allow(6, 2, 400*ms), 300*ms)},
				{At: 0, Cost: 1, Want: delayed(allow(6, 1, 500*ms), 400*ms)},
				// Full: one interval until the excess drains by one.
				{At: 0, Cost: 1, Want: spent(delayed(allow(6, 0, 600*ms), 500*ms), 100*ms)},
				{At: 0, Cost: 1, Want: spent(refuse(6, 0, 100*ms, 600*ms), 100*ms)},
				// One interval later the excess has drained by one.
				{At: 100 * ms, Cost: 1, Want: spent(delayed(allow(6, 0, 600*ms), 500*ms), 100*ms)},
			},
		},
		{
			Name:     "leaky_bucket/nginx_nodelay",
			Policies: nginx(limit.Police, 0),
			Steps: []Step{
				{At: 0, Cost: 1, Want: allow(6, 5, 100*ms)},
				{At: 0, Cost: 1, Want: allow(6, 4, 200*ms)},
				{At: 0, Cost: 1, Want: allow(6, 3, 300*ms)},
				{At: 0, Cost: 1, Want: allow(6, 2, 400*ms)},
				{At: 0, Cost: 1, Want: allow(6, 1, 500*ms)},
				{At: 0, Cost: 1, Want: spent(allow(6, 0, 600*ms), 100*ms)},
				{At: 0, Cost: 1, Want: spent(refuse(6, 0, 100*ms, 600*ms), 100*ms)},
			},
		},
		{
			Name:     "leaky_bucket/nginx_delay3",
			Policies: nginx(limit.Shape, 3),
			Steps: []Step{
				{At: 0, Cost: 1, Want: allow(6, 5, 100*ms)},
				{At: 0, Cost: 1, Want: allow(6, 4, 200*ms)},
				{At: 0, Cost: 1, Want: allow(6, 3, 300*ms)},
				{At: 0, Cost: 1, Want: allow(6, 2, 400*ms)},
				{At: 0, Cost: 1, Want: delayed(allow(6, 1, 500*ms), 100*ms)},
				{At: 0, Cost: 1, Want: spent(delayed(allow(6, 0, 600*ms), 200*ms), 100*ms)},
				{At: 0, Cost: 1, Want: spent(refuse(6, 0, 100*ms, 600*ms), 100*ms)},
			},
		},
		{
			// Capacity is burst+1 = 3 units; 4 can never pass.
			Name:     "leaky_bucket/cost",
			Policies: []limit.Policy{limit.LeakyBucket{Rate: limit.Per(1, s), Burst: 2, Mode: limit.Police}},
			Steps: []Step{
				{At: 0, Cost: 4, Want: refuse(3, 3, limit.Never, 0)},
				{At: 0, Cost: 3, Want: spent(allow(3, 0, 3*s), 1*s)},
				{At: 1 * s, Cost: 1, Want: spent(allow(3, 0, 3*s), 1*s)},
				{At: 1 * s, Cost: 1, Want: spent(refuse(3, 0, 1*s, 3*s), 1*s)},
			},
		},
		{
			// Two policies on one request: nothing is charged when one refuses.
			// Fixed window 3/min; token bucket 1/min burst 5 (T = 60s, τ = 300s).
			Name: "multi/all_or_nothing",
			Policies: []limit.Policy{
				limit.FixedWindow{Limit: 3, Window: time.Minute},
				limit.TokenBucket{Rate: limit.Per(1, time.Minute), Burst: 5},
			},
			Steps: []Step{
				// Window: 0 left; bucket: TAT 180s, 2 left. The window is tighter.
				{At: 0, Cost: 3, Want: indexed(spent(allow(3, 0, 60*s), 60*s), 0)},
				// The window refuses; the bucket would have allowed.
				{At: 0, Cost: 1, Want: indexed(spent(refuse(3, 0, 60*s, 60*s), 60*s), 0)},
				// The bucket was not charged: still 2 left, TAT 180s.
				{At: 0, Cost: 0, Only: 2, Want: allow(5, 2, 180*s)},
				// Both allow and both have 0 left, each with one unit back
				// in 60s: the longer reset (the bucket's TAT 360s, 300s
				// away) is the one reported.
				{At: 60 * s, Cost: 3, Want: indexed(spent(allow(5, 0, 300*s), 60*s), 1)},
				// The bucket refuses cost 2 (TAT 480s would need τ from 180s);
				// the window would have allowed.
				{At: 120 * s, Cost: 2, Want: indexed(refuse(5, 1, 60*s, 240*s), 1)},
				// The window was not charged either.
				{At: 120 * s, Cost: 0, Only: 1, Want: allow(3, 3, 0)},
			},
		},
	}
}
