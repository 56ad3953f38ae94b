package rules

import "github.com/tollgate-dev/tollgate/limit"

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
)

var outcomeNames = [...]string{
	Allowed:       "allowed",
	Delayed:       "delayed",
	Refused:       "refused",
	ShadowAllowed: "shadow_allowed",
	ShadowRefused: "shadow_refused",
	Errored:       "error",
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
	// Policy is the name of the policy of this rule that applied (for a
	// rule with several policies, the first; for a tier, the plan's).
	Policy string
	// Plan is the tier's plan name, empty for rules without tiers.
	Plan string
	// Outcome is the request's outcome under this rule's group (the
	// enforced rules together, or the shadow rules together).
	Outcome Outcome
	// Decision is the merged decision of the rule's group.
	Decision limit.Decision
	// Decisive reports whether this rule holds the most restrictive
	// policy of its group (the one reported in headers).
	Decisive bool
	// Err is the store's error when Outcome is Errored.
	Err error
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
