package rules

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
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

// clientOwned reports whether a key has a part a client owns: its
// address (ip), an API key or other credential it sends (header:NAME,
// query:NAME), or its TLS stack (ja4: shared by the users of one
// client version, a trade-off the penalty docs state). A key only of
// global, path, method, host, grpc_service, grpc_method, country and
// asn is shared by every client that sends such a request.
func clientOwned(parts []keyPart) bool {
	for _, p := range parts {
		switch p.kind {
		case partIP, partHeader, partQuery, partJA4:
			return true
		}
	}
	return false
}

// sharedPenalty is the problem of a penalty on a key no client owns.
const sharedPenalty = "a penalty on a key no client owns (%s) lets one client's refusal lock every client out for the whole penalty: add ip or an API-key header (header:NAME) to the rule's key, or drop the penalty"

// checkSharedPenalties reports every penalty of rule r, whose key no
// client owns, at its path (rules[i].penalty, rules[i].policies[j].penalty,
// rules[i].tiers.plans.NAME[j].penalty).
func checkSharedPenalties(r *Rule, where string, ps *problems) {
	key := strings.Join(r.Key, ", ")
	if r.Penalty != 0 {
		ps.add(where+".penalty", sharedPenalty, key)
	}
	policies := func(list []Policy, at string) {
		for j, p := range list {
			if p.Penalty != 0 {
				ps.add(fmt.Sprintf("%s[%d].penalty", at, j), sharedPenalty, key)
			}
		}
	}
	policies(r.Policies, where+".policies")
	if r.Tiers != nil {
		for _, plan := range sortedKeys(r.Tiers.Plans) {
			policies(r.Tiers.Plans[plan], where+".tiers.plans."+plan)
		}
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
	// watched: a peek watched on the engine's reservations, which had
	// released so much then (reservations.watch).
	watched  bool
	released int64
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
				consider(penaltyDecision(a, a.pen, time.Duration(r.reset-now), i-from))
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
			c := check{i: i}
			if e.pending != nil && a.cost > 0 {
				c.released, c.watched = e.pending.watch(a.key, now)
			}
			checks = append(checks, c)
		}
	}
	var db [8]limit.Decision
	decs := db[:]
	if len(checks) > len(db) {
		decs = make([]limit.Decision, len(checks))
	}
	decs = decs[:len(checks)]
	if err := e.decideChecks(ctx, res, checks, decs); err != nil {
		for _, c := range checks {
			if c.watched {
				e.pending.unwatch(res.at(c.i).key)
			}
		}
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
			// When the penalty ends, the policy may still refuse (a
			// window not yet over): the Retry-After is the later of
			// the two. A counting rule's peek follows its penalty's
			// check; another policy is looked at (cost 0) only now,
			// for a key found under a penalty, not on every request (a
			// store error leaves the penalty's wait).
			wait := a.pen
			if k+1 < len(checks) && checks[k+1].i == c.i && !checks[k+1].pen {
				if decs[k+1].Allowed {
					wait = max(wait, policyWait(a, decs[k+1]))
				}
			} else if pd, err := e.storeOf(a.rule).Apply(ctx, a.key, a.policy.policy, 0); err == nil && pd.Allowed {
				wait = max(wait, policyWait(a, pd))
			}
			e.cachePenalty(a, now, wait)
			d = penaltyDecision(a, a.pen, wait, c.i-from)
		} else {
			if a.pen > 0 { // under a penalty: that is its refusal
				if c.watched {
					e.pending.unwatch(a.key)
				}
				continue
			}
			if c.watched && (!d.Allowed || d.Remaining < a.cost) {
				e.pending.unwatch(a.key)
			}
			switch {
			case !d.Allowed:
				// A peek is always allowed by the algorithms: this is the
				// store's answer to its own failure (mode closed). It
				// refuses, with the store's Retry-After, and is no reason
				// for a penalty.
				d.RetryAfter = max(d.RetryAfter, time.Nanosecond)
			case d.Remaining >= a.cost:
				if c.watched {
					gen, left := e.pending.reserve(a.key, now, c.released, d.Remaining, a.cost)
					if gen == 0 {
						// What is left is reserved by requests in
						// flight: refused until they are answered,
						// with no penalty (nothing is over the limit).
						d.Allowed, d.Remaining = false, max(left, 0)
						d.RetryAfter = reservedRetryAfter
						break
					}
					a.resGen, res.reserving = gen, true
					d.Remaining = left
				}
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
	if refused {
		res.unreserve(from, to)
	}
	return refusal, refused, peek, peeked, nil
}

// reservedRetryAfter is the Retry-After of a request refused because
// what its counting policy has left is reserved by requests in flight
// (reservations): they end when answered, so soon.
const reservedRetryAfter = time.Second

// peekRefusal makes d, the peek of entry a that found less left than its
// cost, a refusal: its Retry-After, and the policy's penalty started.
func (e *Engine) peekRefusal(ctx context.Context, a *applied, d *limit.Decision) {
	d.RetryAfter = max(policyWait(a, *d), time.Nanosecond)
	if a.penKey != "" && a.pen == 0 {
		e.startPenalty(ctx, a)
		if a.pen > 0 {
			d.RetryAfter = max(d.RetryAfter, a.pen)
			e.cachePenalty(a, e.mono(), d.RetryAfter)
		}
	}
}

// policyWait is how long entry a's policy, whose cost-0 look is d, keeps
// refusing a's cost: zero when it has that much left, Never when the
// cost exceeds its capacity. A look tells when one unit is back, not
// when cost units are: for a cost above 1 it is the full allowance's
// return, which is never early.
func policyWait(a *applied, d limit.Decision) time.Duration {
	switch {
	case d.Remaining >= a.cost:
		return 0
	case a.cost > d.Limit:
		return limit.Never
	case a.cost == 1 && d.NextUnitAfter > 0:
		return d.NextUnitAfter
	default:
		return max(d.ResetAfter, d.NextUnitAfter)
	}
}

// cachePenalty remembers in the refusal cache that entry a is under a
// penalty for a.pen more, and that its request is refused for wait (at
// least a.pen: the policy's own wait may be longer).
func (e *Engine) cachePenalty(a *applied, now int64, wait time.Duration) {
	if wait == limit.Never {
		wait = a.pen // no instant to keep: asked again when the penalty ends
	}
	e.refusals.put(a.penKey, now, a.pen, wait, 0)
}

// penaltyDecision is the refusal of entry a, at index i, by a penalty
// with left to run, whose request its policy admits again after wait
// (at least left): nothing remains until then.
func penaltyDecision(a *applied, left, wait time.Duration, i int) limit.Decision {
	wait = max(wait, left)
	return limit.Decision{
		Limit:         a.policy.policy.Quota().Limit,
		RetryAfter:    wait,
		NextUnitAfter: wait,
		ResetAfter:    wait,
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
// left of one already running (which it does not extend). The caller
// puts it in the refusal cache (cachePenalty), with its own wait. A store error
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
	if a.pen == 0 {
		return
	}
	if d.RetryAfter != limit.Never {
		d.RetryAfter = max(d.RetryAfter, a.pen)
		d.NextUnitAfter = max(d.NextUnitAfter, a.pen)
		d.ResetAfter = max(d.ResetAfter, a.pen)
		d.Remaining = 0
	}
	e.cachePenalty(a, e.mono(), d.RetryAfter) // Never: cached for a.pen
}
