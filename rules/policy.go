package rules

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// compiledPolicy is a Policy converted once to a limit.Policy, with the
// fixed strings its headers need.
type compiledPolicy struct {
	name   string
	policy limit.Policy
	// index is its position among its rule's policies as PolicyNames
	// lists them (Event.PolicyIndex).
	index int
	// keyPrefix is "rule\x1fpolicy\x1fstate\x1f", the namespace of its
	// store keys (see stateKind).
	keyPrefix string
	// sfItem is the RateLimit-Policy list member: "name";q=100;w=60.
	sfItem string
	// sfName is the quoted name: "name".
	sfName string
	// limitText is the quota as decimal text, for the older headers.
	limitText string
	// problemViolated is the refusal body's member naming it:
	// ,"violated-policies":["name"].
	problemViolated string
	// scaled links an adaptive policy to its controller; nil otherwise.
	scaled *scaledPolicy
	// permille is the factor this form is scaled by; 0 for the base.
	permille int64
	// concurrency marks a concurrency policy (policy is an inFlight),
	// refused with Retry-After retryAfter.
	concurrency bool
	retryAfter  time.Duration
	// pen is the policy's penalty (Policy.Penalty); nil for none.
	pen *penaltySpec
}

// PolicyError is a Policy that does not convert to a limit.Policy, with
// the field at fault.
type PolicyError struct {
	// Field is the YAML key at fault ("rate", "window", ...), or "" when
	// the policy as a whole is.
	Field string
	// Err says what is wrong; it wraps limit's sentinel errors where one
	// applies (limit.ErrInvalidRate, limit.ErrInvalidPolicy, ...).
	Err error
}

func (e *PolicyError) Error() string {
	if e.Field == "" {
		return e.Err.Error()
	}
	return e.Field + ": " + e.Err.Error()
}

func (e *PolicyError) Unwrap() error { return e.Err }

// ToLimit converts p into the limit.Policy the stores apply. It is the one
// converter of tollgate's policy vocabulary: the gateway's file, the rule
// engine built in code and tollgate replay's -policy flag (through
// ParsePolicySpec) all come here, so a policy one accepts the others
// accept. An error is a *PolicyError naming the field at fault.
func (p Policy) ToLimit() (limit.Policy, error) {
	lp, field, err := p.toLimit()
	if err != nil {
		return nil, &PolicyError{Field: field, Err: err}
	}
	return lp, nil
}

// toLimit converts p to a limit.Policy, or reports what is wrong and in
// which field ("" for the policy as a whole).
func (p Policy) toLimit() (limit.Policy, string, error) {
	algName := p.Algorithm
	if algName == "" {
		algName = limit.AlgTokenBucket.String()
	}
	alg, err := limit.ParseAlgorithm(algName)
	if err != nil {
		return nil, "algorithm", err
	}
	var rate limit.Rate
	if p.Rate != "" {
		if rate, err = limit.ParseRate(p.Rate); err != nil {
			return nil, "rate", err
		}
	}
	var window time.Duration
	if p.Window != "" {
		if window, err = limit.ParsePeriod(p.Window); err != nil {
			return nil, "window", err
		}
	}
	var out limit.Policy
	switch alg {
	case limit.AlgTokenBucket, limit.AlgLeakyBucket:
		switch {
		case p.Rate == "":
			return nil, "rate", fmt.Errorf("%s needs a rate (e.g. 100/s)", alg)
		case p.Limit != 0:
			return nil, "limit", fmt.Errorf("%s takes rate and burst, not limit", alg)
		case p.Window != "":
			return nil, "window", fmt.Errorf("%s takes rate and burst, not window", alg)
		}
		if alg == limit.AlgTokenBucket {
			switch {
			case p.Mode != "":
				return nil, "mode", fmt.Errorf("token_bucket has no mode (leaky_bucket has)")
			case p.Delay != 0:
				return nil, "delay", fmt.Errorf("token_bucket has no delay (leaky_bucket has)")
			}
			out = limit.TokenBucket{Rate: rate, Burst: p.Burst}
			break
		}
		lb := limit.LeakyBucket{Rate: rate, Burst: p.Burst, Delay: p.Delay}
		switch strings.ToLower(p.Mode) {
		case "", "shape":
			lb.Mode = limit.Shape
		case "police", "nodelay":
			lb.Mode = limit.Police
			if p.Delay != 0 {
				return nil, "delay", fmt.Errorf("delay %d has no meaning in mode %q", p.Delay, p.Mode)
			}
		default:
			return nil, "mode", fmt.Errorf("unknown mode %q (want shape, police or nodelay)", p.Mode)
		}
		out = lb
	default:
		switch {
		case p.Burst != 0:
			return nil, "burst", fmt.Errorf("%s takes limit and window (or rate), not burst", alg)
		case p.Mode != "":
			return nil, "mode", fmt.Errorf("%s has no mode", alg)
		case p.Delay != 0:
			return nil, "delay", fmt.Errorf("%s has no delay", alg)
		}
		limitN := p.Limit
		if p.Rate != "" {
			if p.Limit != 0 || p.Window != "" {
				return nil, "rate", fmt.Errorf("%s: give either rate or limit and window, not both", alg)
			}
			limitN, window = rate.Count, rate.Period
		}
		switch alg {
		case limit.AlgFixedWindow:
			out = limit.FixedWindow{Limit: limitN, Window: window}
		case limit.AlgSlidingWindow:
			out = limit.SlidingWindow{Limit: limitN, Window: window}
		default:
			out = limit.SlidingLog{Limit: limitN, Window: window}
		}
	}
	if err := out.Validate(); err != nil {
		return nil, "", err
	}
	return out, "", nil
}

// compilePolicy builds the compiled form of p, named name, for rule.
func compilePolicy(rule, name string, lp limit.Policy) *compiledPolicy {
	q := lp.Quota()
	cp := &compiledPolicy{
		name:      name,
		policy:    lp,
		keyPrefix: rule + keySep + name + keySep + stateKind(lp) + keySep,
		sfName:    strconv.Quote(name),
		limitText: strconv.FormatInt(q.Limit, 10),
	}
	cp.problemViolated = problemViolated(name)
	cp.sfItem = string(AppendPolicyItem(nil, cp.sfName, q.Limit, q.Window))
	return cp
}

// maxSFInt is the largest structured-field Integer (RFC 9651 §3.3.1).
const maxSFInt = 999_999_999_999_999

// CeilSeconds is d in whole seconds, rounded up, never negative: how
// every rate-limit header field states a duration (a reset or a window),
// so that a client that waits as told is never early.
func CeilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

// validName reports whether s is usable as a rule or policy name: letters,
// digits, '-', '_', '.', and no more than 64 bytes.
func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// stateKind names what a policy's stored state means: the algorithm, and
// for the windowed ones the window length. It is part of the store key, so
// a reload that changes a rule's algorithm or window starts its counters
// afresh instead of reading a state that meant something else, while a
// reload that changes only a rate, limit or burst keeps them (a bucket's
// state is a time, valid under any rate).
func stateKind(lp limit.Policy) string {
	switch p := lp.(type) {
	case limit.FixedWindow:
		return p.Algorithm().String() + "=" + p.Window.String()
	case limit.SlidingWindow:
		return p.Algorithm().String() + "=" + p.Window.String()
	case limit.SlidingLog:
		return p.Algorithm().String() + "=" + p.Window.String()
	}
	return lp.Algorithm().String()
}
