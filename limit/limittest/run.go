package limittest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// Options tunes Run for a store.
type Options struct {
	// Resolution is the store's time resolution: durations are compared
	// after rounding both up to a multiple of it. Zero means 1ns (exact).
	Resolution time.Duration
}

// Clock is a settable clock for stores under test: Now returns Unix ns.
type Clock struct{ ns atomic.Int64 }

// Now returns the clock's current time in Unix ns.
func (c *Clock) Now() int64 { return c.ns.Load() }

// Set moves the clock to t (Unix ns).
func (c *Clock) Set(t int64) { c.ns.Store(t) }

// Run drives every case of Cases through stores made by open, one store per
// case, each reading the clock it is given. Keys are "limittest/" + case
// name + "/" + policy index.
func Run(t *testing.T, open func(t *testing.T, clock func() int64) limit.Store, opt Options) {
	t.Helper()
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			clock := new(Clock)
			st := open(t, clock.Now)
			keys := make([]string, len(c.Policies))
			for i := range keys {
				keys[i] = fmt.Sprintf("limittest/%s/%d", c.Name, i)
			}
			for n, step := range c.Steps {
				clock.Set(Base + int64(step.At))
				var (
					d   limit.Decision
					err error
				)
				switch {
				case step.Only > 0:
					d, err = st.Apply(context.Background(), keys[step.Only-1], c.Policies[step.Only-1], step.Cost)
				case len(c.Policies) == 1:
					d, err = st.Apply(context.Background(), keys[0], c.Policies[0], step.Cost)
				default:
					reqs := make([]limit.Request, len(c.Policies))
					for i, p := range c.Policies {
						reqs[i] = limit.Request{Key: keys[i], Policy: p, Cost: step.Cost}
					}
					d, err = st.ApplyAll(context.Background(), reqs)
				}
				if err != nil {
					t.Fatalf("step %d (at %v, cost %d): %v", n, step.At, step.Cost, err)
				}
				check(t, n, step, d, opt.Resolution, len(c.Policies) > 1 && step.Only == 0)
			}
		})
	}
}

// RunPure drives the single-policy cases through the algorithms
// themselves, with no store: the reference every store must match.
func RunPure(t *testing.T) {
	t.Helper()
	for _, c := range Cases() {
		if len(c.Policies) != 1 {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			var (
				st  limit.State
				log limit.Log
			)
			for n, step := range c.Steps {
				now := Base + int64(step.At)
				var d limit.Decision
				switch p := c.Policies[0].(type) {
				case limit.Stateful:
					st, d = p.Decide(st, now, step.Cost)
				case limit.Logged:
					d = p.DecideLog(&log, now, step.Cost)
				default:
					t.Fatalf("policy %v is neither Stateful nor Logged", p)
				}
				check(t, n, step, d, 0, false)
			}
		})
	}
}

func check(t *testing.T, n int, step Step, d limit.Decision, res time.Duration, multi bool) {
	t.Helper()
	w := step.Want
	got := Want{
		Allowed: d.Allowed, Limit: d.Limit, Remaining: d.Remaining,
		RetryAfter: round(d.RetryAfter, res), ResetAfter: round(d.ResetAfter, res),
		NextUnitAfter: round(d.NextUnitAfter, res), Delay: round(d.Delay, res),
	}
	w.RetryAfter, w.ResetAfter, w.Delay = round(w.RetryAfter, res), round(w.ResetAfter, res), round(w.Delay, res)
	w.NextUnitAfter = round(w.NextUnitAfter, res)
	if multi {
		got.Index = d.Index
	} else {
		w.Index = 0
	}
	if got != w {
		t.Errorf("step %d (at %v, cost %d):\n got  %+v\n want %+v", n, step.At, step.Cost, got, w)
	}
}

// round rounds d up to a multiple of res; Never stays Never.
func round(d, res time.Duration) time.Duration {
	if res <= 1 || d == limit.Never || d%res == 0 {
		return d
	}
	return (d/res + 1) * res
}
