package rules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/tollgate-dev/tollgate/internal/redact"
	"github.com/tollgate-dev/tollgate/limit"
)

// decision is the state of one Decide call.
type decision struct {
	e                  *Engine
	req                Request
	method, host, path string
	ip                 netip.Addr
	ipDone             bool
	// The client IP's country and ASN, looked up once (geo.go).
	countryCode          string
	asNumber             uint32
	countryDone, asnDone bool
}

func (d *decision) clientIP() netip.Addr {
	if !d.ipDone {
		d.ip, d.ipDone = d.e.ip.clientAddr(d.req), true
	}
	return d.ip
}

// batch collects the limit.Requests of one group (enforced or shadow)
// without allocating while it holds only one.
type batch struct {
	first limit.Request
	n     int
	more  *[]limit.Request
	// checks counts the group's penalty checks and peeks (precheck).
	checks int
}

// release gives back the batch's slice when it is not applied.
func (b *batch) release(e *Engine) {
	if b.more != nil {
		clear(*b.more)
		e.batches.Put(b.more)
		b.more = nil
	}
}

func (b *batch) add(e *Engine, r limit.Request) {
	switch b.n {
	case 0:
		b.first = r
	case 1:
		b.more = e.batches.Get().(*[]limit.Request)
		*b.more = append((*b.more)[:0], b.first, r)
	default:
		*b.more = append(*b.more, r)
	}
	b.n++
}

// apply charges the batch (of at least one request), whose first request
// is res.at(from), on the engine's store in one call, or, when rules have
// stores of their own, store group by store group (applyGroups).
func (b *batch) apply(ctx context.Context, e *Engine, res *Result, from int) (limit.Decision, error) {
	if b.n == 1 {
		st := e.store
		if e.groups != nil {
			st = e.groups[res.at(from).rule.group].store
		}
		d, err := st.Apply(ctx, b.first.Key, b.first.Policy, b.first.Cost)
		if err != nil {
			err = hideKeys(err, b.first)
		}
		return d, err
	}
	var d limit.Decision
	var err error
	if e.groups == nil {
		d, err = e.store.ApplyAll(ctx, *b.more)
	} else {
		d, err = e.applyGroups(ctx, *b.more, res, from)
	}
	if err != nil {
		err = hideKeys(err, *b.more...)
	}
	clear(*b.more)
	e.batches.Put(b.more)
	b.more = nil
	return d, err
}

// Decide applies every rule matching req and returns the result. It does
// not allocate for an allowed request keyed by IP whose key was seen
// recently. The error is the store's, wrapping ErrStore; the Result is
// still usable then (Outcome Errored, refused when the failure mode of a
// matched enforced rule is closed).
func (e *Engine) Decide(ctx context.Context, req Request) (Result, error) {
	res := Result{e: e, Outcome: Allowed}
	if len(e.enforced) == 0 && len(e.shadow) == 0 {
		return res, nil
	}
	d := decision{e: e, req: req, method: req.Method(), host: HostOnly(req.Host()), path: req.Path()}
	res.path = d.path

	// Concurrency slots first (applied[:nslots]): a request they refuse
	// charges no rate policy.
	if e.conc {
		for _, r := range e.enforced {
			if len(r.conc) > 0 {
				e.collectConcurrency(&d, &res, r)
			}
		}
	}
	var b batch
	var err error
	admitted := true
	if res.nslots > 0 {
		admitted, err = e.acquire(ctx, &res)
	}
	if admitted {
		for _, r := range e.enforced {
			e.collect(&d, &res, &b, r)
		}
	}
	res.enforced = res.n
	if !admitted {
		e.observe(&res, 0, res.enforced, res.Outcome, res.Decision, err, false)
	}
	if b.n > 0 || b.checks > 0 {
		var early bool
		res.Decision, early, err = e.decideGroup(ctx, &res, &b, 0, res.nslots, res.enforced)
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrStore, err)
			res.Outcome = Errored
			// A full store (limit.ErrFull) is refused whatever the failure
			// mode: allowing would let a store filled with limited keys
			// switch limiting off for every new client.
			res.failClosed = errors.Is(err, limit.ErrFull)
			for i := range res.enforced {
				if res.at(i).rule.failClosed {
					res.failClosed = true
					break
				}
			}
			res.Decision = limit.Decision{Allowed: !res.failClosed}
			e.logError(ctx, &res, 0, err)
			if res.failClosed {
				res.Release()
			}
		} else {
			switch {
			case !res.Decision.Allowed:
				res.Outcome = Refused
				res.Release()
			case res.Decision.Delay > 0:
				res.Outcome = Delayed
				res.Delay = min(res.Decision.Delay, res.shapingCap())
			}
		}
		e.observe(&res, 0, res.enforced, res.Outcome, res.Decision, err, early)
	} else if admitted && res.nslots > 0 {
		e.observe(&res, 0, res.enforced, res.Outcome, res.Decision, err, false)
	}

	if len(e.shadow) > 0 {
		var sb batch
		for _, r := range e.shadow {
			e.collect(&d, &res, &sb, r)
		}
		if sb.n > 0 || sb.checks > 0 {
			res.shadowMatched = true
			sd, early, serr := e.decideGroup(ctx, &res, &sb, res.enforced, res.enforced, res.n)
			out := ShadowAllowed
			if serr != nil {
				serr = fmt.Errorf("%w: %w", ErrStore, serr)
				out = Errored
				e.logError(ctx, &res, res.enforced, serr)
				if err == nil {
					err = serr
				}
			} else if !sd.Allowed {
				out = ShadowRefused
				if e.shadowLog != nil {
					r := res.at(res.enforced + sd.Index)
					e.shadowLog.LogAttrs(ctx, slog.LevelInfo, "rate limit: shadow refusal",
						slog.String("rule", r.rule.name), slog.String("policy", r.policy.name),
						slog.Duration("retry_after", sd.RetryAfter), slog.Duration("penalty", r.pen))
				}
			}
			res.Shadow = sd
			e.observe(&res, res.enforced, res.n, out, sd, serr, early)
		}
	}
	return res, err
}

// decideGroup decides the group res.applied[from:to] (the enforced
// rules, or the shadow ones): b holds the requests it charges, those of
// res.applied[bfrom:bfrom+b.n]; the counting rules' entries follow them
// (counting rules come last, see compile). With penalty checks or peeks
// (b.checks), those are decided first, at cost 0 (precheck): a key under
// a penalty or a counting rule with too little left refuses the group
// before anything is charged (early). Then the batch is charged, all or
// nothing; a refusal starts the refusing policy's penalty. The decision
// merges the charge's and the peeks' (Index relative to from).
func (e *Engine) decideGroup(ctx context.Context, res *Result, b *batch, from, bfrom, to int) (d limit.Decision, early bool, err error) {
	var peek limit.Decision
	peeked := false
	if b.checks > 0 {
		var refused bool
		d, refused, peek, peeked, err = e.precheck(ctx, res, from, to)
		if err != nil || refused {
			b.release(e)
			return d, refused, err
		}
		if b.n == 0 {
			if !peeked {
				peek = limit.Decision{Allowed: true}
			}
			return peek, false, nil
		}
	}
	d, err = b.apply(ctx, e, res, bfrom)
	if err != nil {
		return d, false, err
	}
	d.Index += bfrom - from
	if peeked {
		d = limit.Merge(d, peek)
	}
	if !d.Allowed {
		e.penalise(ctx, res, from, &d)
	}
	return d, false, nil
}

// ruleKey is rule r's key value for the request, appended to dst:
// applies is false when r does not apply (it does not match, or its key
// is missing and it does not count anonymous requests); found tells
// whether the key was there (else the value is the anonymous one).
func (d *decision) ruleKey(dst []byte, r *compiledRule) (val []byte, found, applies bool) {
	if !r.match.matches(d) {
		return dst, false, false
	}
	val, found = d.appendKey(dst, r.key)
	if !found {
		if !r.anonymous {
			return val, false, false
		}
		val = append(val[:len(dst)], anonymousValue...)
	}
	return val, found, true
}

// collect appends rule r's requests to b if it matches.
func (e *Engine) collect(d *decision, res *Result, b *batch, r *compiledRule) {
	var kb [192]byte
	val, ok, applies := d.ruleKey(kb[:0], r)
	if !applies {
		return
	}
	valLen := len(val)
	policies := r.policies
	plan := ""
	if r.tiers != nil {
		p := r.tiers.fallback
		id := val
		idOK := ok
		if r.tiers.identity != nil {
			id, idOK = d.appendKey(val[valLen:], r.tiers.identity)
		}
		if idOK {
			if m, found := r.tiers.members[string(id)]; found {
				p = m
			}
		}
		policies, plan = p.policies, p.name
		val = val[:valLen]
	}
	cost := r.cost.fallback
	for i := range r.cost.by {
		if r.cost.by[i].match.matches(d) {
			cost = r.cost.by[i].cost
			break
		}
	}
	peek := r.count != nil
	if peek {
		if r.shadow {
			res.shadowCounting = true
		} else {
			res.counting = true
		}
	}
	for _, p := range policies {
		p = p.current()
		var fb [256]byte
		full := append(append(fb[:0], p.keyPrefix...), val...)
		key := e.keys.intern(full)
		a := applied{rule: r, policy: p, plan: plan, key: key, cost: cost, peek: peek}
		if p.pen != nil {
			full = append(append(fb[:0], p.pen.prefix...), val...)
			a.penKey = e.keys.intern(full)
			b.checks++
		}
		res.add(a)
		if peek {
			b.checks++
		} else {
			b.add(e, limit.Request{Key: key, Policy: p.policy, Cost: cost})
		}
	}
}

// observe reports the rules of res.applied[from:to], a group decided
// out, to the observer: one event per rule, with the rule's own outcome
// (ruleOutcome).
// early: the group was refused before anything was charged (a penalty
// or a peek), so no other rule was charged.
func (e *Engine) observe(res *Result, from, to int, out Outcome, dec limit.Decision, err error, early bool) {
	if e.observer == nil {
		return
	}
	for i := from; i < to; {
		a := res.at(i)
		ev := Event{Rule: a.rule.name, RuleIndex: a.rule.index, Policy: a.policy.name, PolicyIndex: a.policy.index,
			Plan: a.plan, Outcome: out, Decision: dec, Err: err, Key: a.key[len(a.policy.keyPrefix):]}
		j := i
		for ; j < to && res.at(j).rule == a.rule; j++ {
			aj := res.at(j)
			if j-from == dec.Index {
				ev.Decisive = true
				ev.Policy = aj.policy.name
				ev.PolicyIndex = aj.policy.index
			}
			if aj.pen > ev.Penalty {
				ev.Penalty = aj.pen
			}
			ev.PenaltyStarted = ev.PenaltyStarted || aj.penStarted
		}
		ev.Outcome = e.ruleOutcome(res, from, a.rule, out, dec, ev.Decisive)
		if early && ev.Outcome != out {
			ev.Outcome = NotCharged
		}
		e.observer.Observe(ev)
		i = j
	}
}

// logError logs a store error (its keys hashed by batch.apply), at most
// one line every 10s plus a count of the others (package
// internal/logthrottle).
// from is the index of the batch's first applied policy: 0 for the
// enforced rules, Result.enforced for the shadow ones.
func (e *Engine) logError(ctx context.Context, res *Result, from int, err error) {
	if e.logger == nil {
		return
	}
	e.logger.Log(ctx, slog.LevelError, "rate limit: store failed",
		slog.String("rule", res.at(from).rule.name), slog.Bool("refused", from == 0 && res.failClosed),
		slog.String("error", err.Error()))
}

// keyError is a store error whose text has the store keys of its
// decision hashed (package internal/redact): a store may name the key it
// failed on, and keys carry client IPs and API keys.
type keyError struct {
	msg string
	err error
}

func (k *keyError) Error() string { return k.msg }
func (k *keyError) Unwrap() error { return k.err }

// hideKeys returns err with reqs' keys hashed in its text.
func hideKeys(err error, reqs ...limit.Request) error {
	keys := make([]string, len(reqs))
	for i, r := range reqs {
		keys[i] = r.Key
	}
	return &keyError{msg: redact.Keys(err.Error(), keys...), err: err}
}
