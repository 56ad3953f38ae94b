package rules

import (
	"context"
	"fmt"

	"github.com/tollgate-dev/tollgate/limit"
)

// AnswerHeader is the view of a response's header fields that
// Result.Charge reads (a counting rule's Count.Header). Names are passed
// in canonical form.
type AnswerHeader interface {
	// Header returns the field's first value and whether it is present.
	Header(name string) (string, bool)
}

// Counts reports whether a rule that matched the request charges on the
// answer (Rule.Count): the front end must then call Charge once the
// upstream has answered (or failed to), or, for a request it does not
// serve after all, Release (which Holds asks for). It is false for a refused
// request (there is no answer to count), for one only shadow counting
// rules matched that the shadow rules would have refused, and once
// Charge has run.
func (r *Result) Counts() bool {
	return !r.charged && !r.Refused() && (r.counting || r.shadowCounting && r.Shadow.Allowed)
}

// Charge charges the counting rules (Rule.Count) that matched the request
// of r, when the answer (its status and header fields; h may be nil) is
// one they count. Call it once, after the upstream's answer, and only for
// a request r admitted; status 0 means no answer came (the upstream
// failed or the client went away) and is charged as NoAnswerStatus (502,
// what the gateway answers then): only a rule that counts 502 charges it.
//
// Each counting policy is charged on its own, with the rule's cost, in
// its rule's store (one atomic Apply each, or one ApplyEach for the
// rule's policies where the store has it, as Redis does): the request was served, so
// there is nothing to hold back, and one policy found full does not keep
// the answer from the others. Then the request's reservations end
// (counted or not): Decide reserved its cost, so on one engine no
// policy is found full; one found full (requests another gateway
// admitted meanwhile took what was left) is not charged, and starts its
// penalty if it has one. A shadow counting
// rule is charged the same way, unless the shadow rules would have
// refused the request. Charge does not allocate for the memory store;
// its error wraps ErrStore, with the store keys hashed, and the other
// policies are charged still.
func (r *Result) Charge(ctx context.Context, status int, h AnswerHeader) error {
	if !r.Counts() {
		r.unreserve(0, r.n)
		return nil
	}
	r.charged = true
	// The reservations end once the store has the charges.
	defer r.unreserve(0, r.n)
	e := r.e
	var first error
	end := r.n
	if r.shadowMatched && !r.Shadow.Allowed {
		end = r.enforced // the shadow rules would have refused: no answer
	}
	for i := r.nslots; i < end; {
		a := r.at(i)
		j := i + 1
		for j < end && r.at(j).rule == a.rule {
			j++
		}
		if a.peek && a.rule.count.counts(status, h) {
			if err := e.charge(ctx, r, i, j); err != nil && first == nil {
				first = err
			}
		}
		i = j
	}
	return first
}

// charge charges the entries r.applied[from:to] of one counting rule and
// reports the charge to the observer (Outcome Counted, or Errored).
func (e *Engine) charge(ctx context.Context, r *Result, from, to int) error {
	st := e.storeOf(r.at(from).rule)
	var dec limit.Decision
	var failed error
	charged := false
	var decs *[]limit.Decision
	if ea, ok := st.(limit.EachApplier); ok && to-from > 1 {
		// One round trip for the rule's policies.
		reqs := e.batches.Get().(*[]limit.Request)
		decs = e.decisions.Get().(*[]limit.Decision)
		*reqs = (*reqs)[:0]
		for i := from; i < to; i++ {
			a := r.at(i)
			*reqs = append(*reqs, limit.Request{Key: a.key, Policy: a.policy.policy, Cost: a.cost})
		}
		if cap(*decs) < to-from {
			*decs = make([]limit.Decision, to-from)
		}
		*decs = (*decs)[:to-from]
		if err := ea.ApplyEach(ctx, *reqs, *decs); err != nil {
			failed = fmt.Errorf("%w: %w", ErrStore, hideKeys(err, *reqs...))
		}
		clear(*reqs)
		e.batches.Put(reqs)
		defer func() {
			clear(*decs)
			e.decisions.Put(decs)
		}()
	}
	for i := from; i < to && (decs == nil || failed == nil); i++ {
		a := r.at(i)
		var d limit.Decision
		var err error
		if decs != nil {
			d = (*decs)[i-from]
		} else {
			d, err = st.Apply(ctx, a.key, a.policy.policy, a.cost)
		}
		if err != nil {
			if failed == nil {
				failed = fmt.Errorf("%w: %w", ErrStore, hideKeys(err, limit.Request{Key: a.key}))
			}
			continue
		}
		if !d.Allowed && a.penKey != "" && a.pen == 0 {
			e.startPenalty(ctx, a)
			if a.pen > 0 {
				e.cachePenalty(a, e.mono(), a.pen)
			}
		}
		if d.Remaining == 0 && d.NextUnitAfter > 0 {
			// The next peek would find nothing left: spare it the store.
			e.refusals.put(a.key, e.mono(), d.NextUnitAfter, d.ResetAfter, d.Limit)
		}
		d.Index = i - from
		if charged {
			dec = limit.Merge(dec, d)
		} else {
			dec, charged = d, true
		}
	}
	decisive := from + dec.Index
	if failed != nil {
		e.logError(ctx, r, from, failed)
	}
	if e.observer == nil {
		return failed
	}
	a, top := r.at(from), r.at(decisive)
	ev := Event{Rule: a.rule.name, RuleIndex: a.rule.index, Policy: top.policy.name, PolicyIndex: top.policy.index,
		Plan: a.plan, Outcome: Counted, Decision: dec, Err: failed, Key: a.key[len(a.policy.keyPrefix):]}
	if failed != nil {
		ev.Outcome = Errored
	}
	for i := from; i < to; i++ {
		if p := r.at(i); p.penStarted && p.pen > ev.Penalty {
			ev.Penalty, ev.PenaltyStarted = p.pen, true
		}
	}
	e.observer.Observe(ev)
	return failed
}
