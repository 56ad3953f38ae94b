package rules

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// AlgConcurrency is the Policy.Algorithm of a concurrency limit: at most
// Limit requests of a key in flight at once (nginx's limit_conn), each
// holding a slot from the decision until Result.Release. A request
// beyond is refused with Retry-After: RetryAfter.
const AlgConcurrency = "concurrency"

// defaultRetryAfter is a concurrency refusal's Retry-After when the
// policy sets none.
const defaultRetryAfter = time.Second

// inFlight is a concurrency policy as a limit.Policy, so that it names
// itself in headers and refusals as the rate policies do. It has no
// algorithm of package limit: the engine applies it through Config.Slots.
type inFlight struct{ max int64 }

func (inFlight) Algorithm() limit.Algorithm { return 0 }
func (p inFlight) Validate() error {
	if p.max < 1 {
		return fmt.Errorf("%w: concurrency limit %d must be at least 1", limit.ErrInvalidPolicy, p.max)
	}
	return nil
}
func (p inFlight) Quota() limit.Quota { return limit.Quota{Limit: p.max} }
func (p inFlight) String() string     { return "concurrency(limit=" + strconv.FormatInt(p.max, 10) + ")" }

// compileConcurrency compiles a concurrency policy, or records why not.
func compileConcurrency(p Policy, ns, name, at string, ps *problems) *compiledPolicy {
	switch {
	case p.Limit < 1:
		ps.add(at+".limit", "concurrency needs a limit of at least 1 (the requests of a key in flight at once)")
		return nil
	case p.Rate != "":
		ps.add(at+".rate", "concurrency takes limit, not rate")
		return nil
	case p.Window != "" || p.Burst != 0 || p.Mode != "" || p.Delay != 0:
		ps.add(at, "concurrency takes limit and retry_after only")
		return nil
	case p.RetryAfter < 0:
		ps.add(at+".retry_after", "%v must not be negative", p.RetryAfter)
		return nil
	}
	cp := compilePolicy(ns, name, inFlight{max: p.Limit})
	cp.keyPrefix = ns + keySep + name + keySep + AlgConcurrency + keySep
	cp.concurrency = true
	cp.retryAfter = p.RetryAfter
	if cp.retryAfter == 0 {
		cp.retryAfter = defaultRetryAfter
	}
	return cp
}

// concMax is a concurrency policy's limit (scaled, when adaptive).
func (p *compiledPolicy) concMax() int64 { return p.policy.(inFlight).max }

// slot is a concurrency slot of a Result: its key and, once taken, its
// lease.
type slot struct {
	key   string
	lease limit.Lease
	held  bool
}

// addSlot records the key of the concurrency policy just added.
func (r *Result) addSlot(key string) {
	if r.nslots < len(r.slotsInline) {
		r.slotsInline[r.nslots] = slot{key: key}
	} else {
		r.slotsSpill = append(r.slotsSpill, slot{key: key})
	}
	r.nslots++
}

func (r *Result) slotAt(i int) *slot {
	if i < len(r.slotsInline) {
		return &r.slotsInline[i]
	}
	return &r.slotsSpill[i-len(r.slotsInline)]
}

// collectConcurrency adds rule r's concurrency policies to res if it
// matches, with their keys.
func (e *Engine) collectConcurrency(d *decision, res *Result, r *compiledRule) {
	var kb [192]byte
	val, _, applies := d.ruleKey(kb[:0], r)
	if !applies {
		return
	}
	for _, p := range r.conc {
		p = p.current()
		var fb [256]byte
		full := append(append(fb[:0], p.keyPrefix...), val...)
		key := e.keys.intern(full)
		res.add(applied{rule: r, policy: p, key: key})
		res.addSlot(key)
	}
}

// acquire takes the slots of res's concurrency policies (the first
// res.nslots applied). It returns false when one is refused (every slot
// taken is given back, and res is the refusal), when the slot store
// failed and the rule's failure mode is closed, or when the request's
// context ended (its client went away) before it had its slots. A store
// failure of a rule whose mode is open or local takes no slot and goes on
// (the slots have no local fallback yet).
func (e *Engine) acquire(ctx context.Context, res *Result) (bool, error) {
	var firstErr error
	for i := 0; i < res.nslots; i++ {
		a, s := res.at(i), res.slotAt(i)
		limitN := a.policy.concMax()
		got, err := e.slots.Acquire(ctx, s.key, limitN)
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrStore, hideKeys(err, limit.Request{Key: s.key}))
			if firstErr == nil {
				firstErr = err
			}
			if ctx.Err() != nil {
				// The client went away before a slot was had: refuse
				// (nobody reads the answer). Admitting it without a slot
				// would let every abandoned request pass the limit.
				res.Release()
				res.Outcome, res.failClosed = Errored, true
				res.Decision = limit.Decision{Index: i}
				return false, firstErr
			}
			e.logError(ctx, res, 0, err)
			if a.rule.failClosed {
				res.Release()
				res.Outcome, res.failClosed = Errored, true
				res.Decision = limit.Decision{Index: i}
				return false, firstErr
			}
			res.Outcome = Errored // allowed without a slot
			continue
		}
		if !got.OK {
			res.Release()
			ra := a.policy.retryAfter
			res.Outcome = Refused
			res.Decision = limit.Decision{Limit: limitN, RetryAfter: ra, NextUnitAfter: ra, ResetAfter: ra,
				Policy: a.policy.policy, Index: i}
			return false, firstErr
		}
		s.lease, s.held = got.Lease, true
		if i == 0 {
			res.Decision = limit.Decision{Allowed: true, Limit: limitN, Remaining: max(limitN-got.Held, 0),
				Policy: a.policy.policy}
		}
	}
	return true, firstErr
}

// Release gives back the concurrency slots the request holds, and ends
// the reservations of its counting rules that Charge has not ended (a
// request refused by the front end or never served: see Counts). Call it
// once the response has been sent or the client has gone, on every path
// (a deferred call covers panics); a Result that holds nothing does
// nothing, and a second call does nothing. Call it on the one copy of
// the Result that was charged, or on none: a copy made before Charge
// still holds the reservations Charge ended. It does not use the request's context,
// which is cancelled when the client goes away: the slot store bounds the
// call itself.
func (r *Result) Release() {
	r.unreserve(0, r.n)
	for i := 0; i < r.nslots; i++ {
		s := r.slotAt(i)
		if !s.held {
			continue
		}
		s.held = false
		if err := r.e.slots.Release(context.Background(), s.key, s.lease); err != nil && r.e.logger != nil {
			r.e.logger.Log(context.Background(), slog.LevelError, "rate limit: releasing a concurrency slot failed",
				slog.String("rule", r.at(i).rule.name), slog.String("error", hideKeys(err, limit.Request{Key: s.key}).Error()))
		}
	}
}

// Holds reports whether the request holds concurrency slots or counting
// reservations that Release must give back or end.
func (r *Result) Holds() bool {
	if r.reserving {
		return true
	}
	for i := 0; i < r.nslots; i++ {
		if r.slotAt(i).held {
			return true
		}
	}
	return false
}

// ConcurrencyRule returns the name of the first rule with a concurrency
// policy, if any: a front end that cannot see the end of the requests it
// decides on (forward-auth) refuses such an engine.
func (e *Engine) ConcurrencyRule() (string, bool) {
	if !e.conc {
		return "", false
	}
	for _, r := range e.enforced { // a shadow rule holds no slots
		if len(r.conc) > 0 {
			return r.name, true
		}
	}
	return "", false
}
