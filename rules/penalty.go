package rules

import (
	"context"
	"log/slog"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// The bounds of a penalty (Policy.Penalty, Rule.Penalty).
const (
	MinPenalty = time.Second
	MaxPenalty = 30 * 24 * time.Hour
)

// penaltyMarker follows a policy's key prefix in the store key of its
// penalties: no key value can start with it (raw values are printable,
// hashed ones start with '#', the anonymous one is "\x1eanonymous"), so
// a penalty key never equals a counter's.
const penaltyMarker = "\x1epenalty" + keySep

// penaltySpec is a policy's penalty, kept in the policy's store as a
// token bucket of burst 1 refilling once per penalty: charging it (cost
// 1) starts the penalty, and only once it has run out can it be charged
// again, so a running penalty is never extended; peeking it (cost 0)
// finds it in force while nothing remains, for exactly NextUnitAfter.
type penaltySpec struct {
	d      time.Duration
	policy limit.Policy // limit.TokenBucket{Rate: 1/d, Burst: 1}
	prefix string       // the policy's keyPrefix, then penaltyMarker
}

// compilePenalty validates penalty d of policy cp (set at where) and
// attaches it.
func compilePenalty(cp *compiledPolicy, d time.Duration, where string, ps *problems) {
	switch {
	case d == 0:
		return
	case !penaltyInBounds(d):
		ps.add(where, "%v: want between 1s and 720h (30 days)", d)
		return
	case cp.concurrency:
		ps.add(where, "a concurrency policy takes no penalty: its refusals end when a slot frees")
		return
	}
	cp.pen = &penaltySpec{
		d:      d,
		policy: limit.TokenBucket{Rate: limit.Rate{Count: 1, Period: d}, Burst: 1},
		prefix: cp.keyPrefix + penaltyMarker,
	}
}

// penaltyInBounds reports whether d is a usable penalty.
func penaltyInBounds(d time.Duration) bool { return d >= MinPenalty && d <= MaxPenalty }

// checkRulePenalty validates a rule's Penalty d, the default of its
// policies' (compilePolicies attaches it): in bounds, and with a rate
// policy to take it.
func (e *Engine) checkRulePenalty(d time.Duration, cr *compiledRule, where string, ps *problems) {
	switch {
	case !penaltyInBounds(d):
		ps.add(where, "%v: want between 1s and 720h (30 days)", d)
	case cr.tiers == nil && len(cr.policies) == 0 && len(cr.conc) > 0:
		ps.add(where, "the rule has only concurrency policies, which take no penalty")
	}
}

// Penalty is, when the request was refused because its key is under a
// penalty (found in force, or started by this refusal), the time the
// penalty has left; zero otherwise (not refused, or refused by a limit
// with no penalty).
func (r *Result) Penalty() time.Duration {
	if r.Outcome != Refused || r.enforced == 0 {
		return 0
	}
	return r.at(r.Decision.Index).pen
}

// storeOf is the store rule r is charged on.
func (e *Engine) storeOf(r *compiledRule) limit.Store {
	if e.groups != nil {
		return e.groups[r.group].store
	}
	return e.store
}

// check is one cost-0 request of a precheck: the penalty key (pen) or
// the policy key (a counting rule's peek) of the applied entry i.
type check struct {
	i   int
	pen bool
}

func (c check) request(res *Result) limit.Request {
	a := res.at(c.i)
	if c.pen {
		return limit.Request{Key: a.penKey, Policy: a.policy.pen.policy}
	}
	return limit.Request{Key: a.key, Policy: a.policy.policy}
}

// precheck decides, before anything of group res.applied[from:to] is
// charged, its penalty checks and its counting rules' peeks, all at cost
// 0 (one ApplyEach per store that has it, else one Apply each). A key
// under a penalty, or a peek finding less left than the request's cost,
// refuses the group: refusal is the most restrictive such refusal (the
// longest Retry-After), Index relative to from. Otherwise peek is the
// merge of the peeks (peeked false when there were none), for headers.
// A refusing peek starts its policy's penalty.
func (e *Engine) precheck(ctx context.Context, res *Result, from, to int) (refusal limit.Decision, refused bool, peek limit.Decision, peeked bool, err error) {
	consider := func(d limit.Decision) {
		if !refused || d.RetryAfter > refusal.RetryAfter ||
			d.RetryAfter == refusal.RetryAfter && d.Remaining < refusal.Remaining {
			refusal, refused = d, true
		}
	}
	// Refusals known without a store call (refusalCache): any one
	// refuses the group.
	now := e.mono()
	for i := from; i < to; i++ {
		a := res.at(i)
		if a.penKey != "" {
			if r, ok := e.refusals.get(a.penKey, now); ok {
				a.pen = time.Duration(r.next - now)
				consider(penaltyDecision(a, a.pen, i-from))
				continue
			}
		}
		if a.peek {
			if r, ok := e.refusals.get(a.key, now); ok {
				d := limit.Decision{Limit: r.limit, NextUnitAfter: time.Duration(r.next - now),
					ResetAfter: time.Duration(r.reset - now), Policy: a.policy.policy, Index: i - from}
				e.peekRefusal(ctx, a, &d)
				consider(d)
			}
		}
	}
	if refused {
		return refusal, true, limit.Decision{}, false, nil
	}
	var cb [8]check
	checks := cb[:0]
	for i := from; i < to; i++ {
		a := res.at(i)
		if a.penKey != "" {
			checks = append(checks, check{i: i, pen: true})
		}
		if a.peek {
			checks = append(checks, check{i: i})
		}
	}
	var db [8]limit.Decision
	decs := db[:]
	if len(checks) > len(db) {
		decs = make([]limit.Decision, len(checks))
	}
	decs = decs[:len(checks)]
	if err := e.decideChecks(ctx, res, checks, decs); err != nil {
		return limit.Decision{}, false, limit.Decision{}, false, err
	}
	for k, c := range checks {
		a := res.at(c.i)
		d := decs[k]
		d.Index = c.i - from
		if c.pen {
			if d.Remaining > 0 || d.NextUnitAfter <= 0 {
				continue
			}
			a.pen = d.NextUnitAfter
			e.refusals.put(a.penKey, now, a.pen, a.pen, 0)
			d = penaltyDecision(a, a.pen, c.i-from)
		} else {
			if a.pen > 0 { // under a penalty: that is its refusal
				continue
			}
			switch {
			case !d.Allowed:
				// A peek is always allowed by the algorithms: this is the
				// store's answer to its own failure (mode closed). It
				// refuses, with the store's Retry-After, and is no reason
				// for a penalty.
				d.RetryAfter = max(d.RetryAfter, time.Nanosecond)
			case d.Remaining >= a.cost:
				if peeked {
					peek = limit.Merge(peek, d)
				} else {
					peek, peeked = d, true
				}
				continue
			default:
				d.Allowed = false
				if d.Remaining == 0 {
					e.refusals.put(a.key, now, d.NextUnitAfter, d.ResetAfter, d.Limit)
				}
				e.peekRefusal(ctx, a, &d)
			}
		}
		consider(d)
	}
	return refusal, refused, peek, peeked, nil
}

// peekRefusal makes d, the peek of entry a that found less left than its
// cost, a refusal: its Retry-After, and the policy's penalty started.
func (e *Engine) peekRefusal(ctx context.Context, a *applied, d *limit.Decision) {
	switch {
	case a.cost > d.Limit:
		d.RetryAfter = limit.Never
	case a.cost == 1 && d.NextUnitAfter > 0:
		d.RetryAfter = d.NextUnitAfter
	default:
		// A peek tells when one unit is back, not when cost
		// units are: the full allowance's return is never early.
		d.RetryAfter = max(d.ResetAfter, d.NextUnitAfter, time.Nanosecond)
	}
	if a.penKey != "" {
		e.startPenalty(ctx, a)
		d.RetryAfter = max(d.RetryAfter, a.pen)
	}
}

// penaltyDecision is the refusal of entry a, at index i, by a penalty
// with left to run: nothing remains until it ends.
func penaltyDecision(a *applied, left time.Duration, i int) limit.Decision {
	return limit.Decision{
		Limit:         a.policy.policy.Quota().Limit,
		RetryAfter:    left,
		NextUnitAfter: left,
		ResetAfter:    left,
		Policy:        a.policy.policy,
		Index:         i,
	}
}

// decideChecks decides checks into out, store by store.
func (e *Engine) decideChecks(ctx context.Context, res *Result, checks []check, out []limit.Decision) error {
	if e.groups == nil {
		return e.checkOn(ctx, e.store, res, checks, out, -1)
	}
	for g := range e.groups {
		if err := e.checkOn(ctx, e.groups[g].store, res, checks, out, g); err != nil {
			return err
		}
	}
	return nil
}

// checkOn decides the checks of store group g (every check when g < 0)
// on st.
func (e *Engine) checkOn(ctx context.Context, st limit.Store, res *Result, checks []check, out []limit.Decision, g int) error {
	in := func(c check) bool { return g < 0 || res.at(c.i).rule.group == g }
	n := 0
	for _, c := range checks {
		if in(c) {
			n++
		}
	}
	if ea, ok := st.(limit.EachApplier); ok && n > 1 {
		reqs := e.batches.Get().(*[]limit.Request)
		decs := e.decisions.Get().(*[]limit.Decision)
		*reqs = (*reqs)[:0]
		for _, c := range checks {
			if in(c) {
				*reqs = append(*reqs, c.request(res))
			}
		}
		if cap(*decs) < n {
			*decs = make([]limit.Decision, n)
		}
		*decs = (*decs)[:n]
		err := ea.ApplyEach(ctx, *reqs, *decs)
		if err != nil {
			err = hideKeys(err, *reqs...)
		} else {
			j := 0
			for k, c := range checks {
				if in(c) {
					out[k] = (*decs)[j]
					j++
				}
			}
		}
		clear(*reqs)
		clear(*decs)
		e.batches.Put(reqs)
		e.decisions.Put(decs)
		return err
	}
	for k, c := range checks {
		if !in(c) {
			continue
		}
		r := c.request(res)
		d, err := st.Apply(ctx, r.Key, r.Policy, 0)
		if err != nil {
			return hideKeys(err, r)
		}
		out[k] = d
	}
	return nil
}

// startPenalty starts the penalty of entry a, whose policy refused it,
// and records in a the time it has left: the whole penalty, or what is
// left of one already running (which it does not extend). A store error
// is logged and leaves a without a penalty: the refusal stands.
func (e *Engine) startPenalty(ctx context.Context, a *applied) {
	d, err := e.storeOf(a.rule).Apply(ctx, a.penKey, a.policy.pen.policy, 1)
	if err != nil {
		if e.logger != nil {
			err = hideKeys(err, limit.Request{Key: a.penKey})
			e.logger.Log(ctx, slog.LevelError, "rate limit: store failed",
				slog.String("rule", a.rule.name), slog.String("penalty", a.policy.name),
				slog.String("error", err.Error()))
		}
		return
	}
	if d.NextUnitAfter > 0 {
		a.pen = d.NextUnitAfter
		a.penStarted = d.Allowed
		e.refusals.put(a.penKey, e.mono(), a.pen, a.pen, 0)
	}
}

// penalise starts the penalty of the entry of group res.applied[from:]
// that refused in d (its Index), if its policy has one, and makes d's
// Retry-After the penalty's.
func (e *Engine) penalise(ctx context.Context, res *Result, from int, d *limit.Decision) {
	a := res.at(from + d.Index)
	if a.penKey == "" || a.pen > 0 {
		return
	}
	e.startPenalty(ctx, a)
	if a.pen > 0 && d.RetryAfter != limit.Never {
		d.RetryAfter = max(d.RetryAfter, a.pen)
		d.NextUnitAfter = max(d.NextUnitAfter, a.pen)
		d.ResetAfter = max(d.ResetAfter, a.pen)
		d.Remaining = 0
	}
}
