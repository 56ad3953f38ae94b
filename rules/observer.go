package rules

import (
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// Outcome is what became of a request under a rule.
type Outcome uint8

// The outcomes. A shadow rule's outcomes are ShadowAllowed and
// ShadowRefused (whether it would have delayed shows in the Decision).
const (
	// Allowed: served at once.
	Allowed Outcome = iota + 1
	// Delayed: admitted after waiting Decision.Delay (capped).
	Delayed
	// Refused: answered with the refusal.
	Refused
	// ShadowAllowed: a shadow rule that would have allowed.
	ShadowAllowed
	// ShadowRefused: a shadow rule that would have refused; the request
	// went on.
	ShadowRefused
	// Errored: the store returned an error; the request was allowed or
	// refused as the matched rules' failure mode says (Config.OnErrorOf).
	Errored
	// NotCharged: another rule refused the request (or, for a shadow
	// rule, would have) and this one was not charged for it. Only an
	// Event carries it, never a Result.
	NotCharged
	// Counted: Result.Charge charged this counting rule (Rule.Count)
	// for the request's answer. The Event's Decision is the charge's;
	// when it is not Allowed the limit was already full (requests in
	// flight between the peek and the charge), nothing was charged, and
	// the policy's penalty, if it has one, was started (Penalty,
	// PenaltyStarted). Only an Event carries it, and only Charge sends
	// it: one per counting rule whose Count matched the answer. It is
	// the last outcome.
	Counted
)

var outcomeNames = [...]string{
	Allowed:       "allowed",
	Delayed:       "delayed",
	Refused:       "refused",
	ShadowAllowed: "shadow_allowed",
	ShadowRefused: "shadow_refused",
	Errored:       "error",
	NotCharged:    "not_charged",
	Counted:       "counted",
}

// String returns the outcome's metric label, e.g. "shadow_refused".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) && outcomeNames[o] != "" {
		return outcomeNames[o]
	}
	return "unknown"
}

// Event is what an Observer receives: one per matching rule of a decided
// request.
type Event struct {
	// Rule is the rule's name (a bounded label; never a client key).
	Rule string
	// RuleIndex is the rule's position in Config.Rules, so that an
	// observer can keep per-rule state in a slice instead of a map.
	RuleIndex int
	// Policy is the name of the policy of this rule that applied: the
	// one that decided when this rule is Decisive (on a refusal, the
	// policy that refused), else the rule's first (for a tier, the
	// plan's first).
	Policy string
	// PolicyIndex is Policy's position in Engine.PolicyNames(RuleIndex),
	// for per-policy state in a slice.
	PolicyIndex int
	// Plan is the tier's plan name, empty for rules without tiers.
	Plan string
	// Outcome is what became of the request under this rule. When its
	// group (the enforced rules together, or the shadow rules together)
	// refused, only the Decisive rule has Refused (ShadowRefused): the
	// others have NotCharged, or Allowed (ShadowAllowed) when their store
	// was charged before the refusing one (see Consistency tiers in the
	// package documentation), so that a refusal is counted once, against
	// the rule and policy that refused. Otherwise it is the group's:
	// Allowed, Delayed, ShadowAllowed or Errored. A counting rule
	// (Rule.Count) that admits is Allowed (ShadowAllowed) at Decide,
	// where it charged nothing; Result.Charge sends its charge after the
	// answer as a second Event, Outcome Counted (Errored when the store
	// failed), with Decisive false. A refusal made before anything was
	// charged (a key under a penalty, a counting rule's peek) leaves
	// every other rule NotCharged, whatever its store.
	Outcome Outcome
	// Decision is the merged decision of the rule's group.
	Decision limit.Decision
	// Decisive reports whether this rule holds the most restrictive
	// policy of its group (the one reported in headers).
	Decisive bool
	// Err is the store's error when Outcome is Errored.
	Err error
	// Penalty is the time left of the penalty (Policy.Penalty) the key
	// is under for this rule: found in force by this decision (which it
	// then refused, or, when another rule was decisive, would have), or
	// started by it (PenaltyStarted). Zero otherwise. An observer that
	// shows penalties in force keeps, per key, the instant now+Penalty.
	Penalty time.Duration
	// PenaltyStarted reports that this decision (or, with Outcome
	// Counted, this charge) started the penalty: the key's policy
	// refused it and no penalty was running. A running penalty is never
	// extended, so each penalty is started once.
	PenaltyStarted bool
	// Key is the request's key value under this rule (an IP, an API key,
	// the parts of a composite key joined by "\x1f"; a shadow value for
	// anonymous requests), without the rule and policy prefix of the
	// store key. It is personal data: never a metric label, and hashed
	// (internal/redact) before it reaches a log. Its string stays valid
	// after Observe returns.
	Key string
}

// Observer receives decisions for metrics and logs. Observe is called
// synchronously on the request path, once per matching rule: keep it fast
// and do not retain ev beyond the call. It must be safe for concurrent use.
type Observer interface {
	Observe(ev Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(ev Event)

// Observe calls f(ev).
func (f ObserverFunc) Observe(ev Event) { f(ev) }

// ruleOutcome is what became of the request under rule r, whose group
// (res.at(from) onwards) decided out: a refusal is the decisive rule's;
// the other rules were not charged, unless their store was charged
// before the refusing one.
func (e *Engine) ruleOutcome(res *Result, from int, r *compiledRule, out Outcome, dec limit.Decision, decisive bool) Outcome {
	if decisive || out != Refused && out != ShadowRefused {
		return out
	}
	if e.groups != nil && r.group < res.at(from+dec.Index).rule.group {
		// Groups are charged in order and the first refusal stops the
		// rest: an earlier group admitted the request and stays charged.
		if out == ShadowRefused {
			return ShadowAllowed
		}
		return Allowed
	}
	return NotCharged
}

// PolicyNames returns the names Event.Policy takes for the rule at
// position rule in Config.Rules, indexed by Event.PolicyIndex: the rule's
// policies in order, or for a rule with tiers every plan's, plans in name
// order (names may repeat across plans). It returns nil for a position
// out of range. The slice is new; an observer may size per-policy state
// with it before the engine decides anything.
func (e *Engine) PolicyNames(rule int) []string {
	for _, list := range [][]*compiledRule{e.enforced, e.shadow} {
		for _, cr := range list {
			if cr.index != rule {
				continue
			}
			ps := cr.allPolicies()
			names := make([]string, len(ps))
			for i, p := range ps {
				names[i] = p.name
			}
			return names
		}
	}
	return nil
}

// allPolicies is every policy of the rule, in PolicyNames order: its
// rate policies, then its concurrency policies.
func (r *compiledRule) allPolicies() []*compiledPolicy {
	if r.tiers != nil {
		return r.tiers.all
	}
	if len(r.conc) == 0 {
		return r.policies
	}
	return append(append([]*compiledPolicy(nil), r.policies...), r.conc...)
}
