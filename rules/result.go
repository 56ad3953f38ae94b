package rules

import (
	"strconv"
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// Header is one response header field to set. Name is in canonical form.
type Header struct {
	Name, Value string
}

// The response header field names the engine produces, in canonical form.
const (
	HeaderRateLimitPolicy     = "Ratelimit-Policy"
	HeaderRateLimit           = "Ratelimit"
	HeaderRateLimitLimit      = "Ratelimit-Limit"
	HeaderRateLimitRemaining  = "Ratelimit-Remaining"
	HeaderRateLimitReset      = "Ratelimit-Reset"
	HeaderXRateLimitLimit     = "X-Ratelimit-Limit"
	HeaderXRateLimitRemaining = "X-Ratelimit-Remaining"
	HeaderXRateLimitReset     = "X-Ratelimit-Reset"
	HeaderRetryAfter          = "Retry-After"
	HeaderCacheControl        = "Cache-Control"
)

// The draft-10 structured-field parameter names, kept in one place because
// a pending revision (ratelimit-headers PR #166) renames r and t.
const (
	paramQuota     = "q"
	paramWindow    = "w"
	paramRemaining = "r"
	paramReset     = "t"
)

// inlineApplied is how many applied policies a Result holds without
// allocating.
const inlineApplied = 4

// applied is one policy applied to a request.
type applied struct {
	rule   *compiledRule
	policy *compiledPolicy
	plan   string
	key    string // the store key: policy.keyPrefix, then the key value
	cost   int64  // what the request costs under the rule
	// penKey is the store key of the policy's penalty (its pen.prefix,
	// then the key value); "" when the policy has none.
	penKey string
	// pen is the time left of the penalty the key is under, found in
	// force or started by this decision (or its Charge); zero for none.
	pen        time.Duration
	penStarted bool // this decision (or its Charge) started pen
	// peek: the rule counts on the answer (Rule.Count), so Decide only
	// peeks this policy (cost 0) and Charge charges it.
	peek bool
}

// Result is the engine's verdict on one request and everything the response
// must carry because of it. Decide returns it by value without allocating;
// it refers to the strings the Request returned, so use it while those are
// valid.
type Result struct {
	// Outcome is Allowed, Delayed, Refused or Errored; shadow rules never
	// change it. A request no rule matched is Allowed, with Matched false.
	Outcome Outcome
	// Decision is the merged decision of the enforced rules: the most
	// restrictive policy's (Decision.Index is its position among them).
	// Zero when no enforced rule matched.
	Decision limit.Decision
	// Shadow is the merged decision of the shadow rules that matched.
	Shadow limit.Decision
	// Delay is how long to wait before serving a Delayed request:
	// Decision.Delay capped by the decisive rule's MaxDelay. Zero
	// otherwise.
	Delay time.Duration

	e              *Engine
	path           string
	enforced       int // applied[:enforced] are the enforced policies
	n              int // applied count: enforced, then shadow
	shadowMatched  bool
	failClosed     bool // the store failed and a matched rule's mode is closed
	counting       bool // an enforced counting rule (Rule.Count) matched: see Counts
	shadowCounting bool // a shadow one did
	charged        bool // Charge has run
	inline         [inlineApplied]applied
	spill          []applied
	// The keys and leases of the concurrency policies, applied[:nslots].
	nslots      int
	slotsInline [2]slot
	slotsSpill  []slot
}

// shapingCap is the max_delay that caps a delayed request's wait: that of
// the enforced rule whose shaping policy asked for the delay. The merged
// decision does not say which policy that was (Decision.Index names the
// most restrictive, e.g. the one with the fewest requests left), so it is
// the smallest max_delay among the enforced rules with a shaping policy:
// exact with one shaping rule, and with several the wait never exceeds
// any of their caps.
func (r *Result) shapingCap() time.Duration {
	limitCap := time.Duration(-1)
	for i := 0; i < r.enforced; i++ {
		a := r.at(i)
		if lb, ok := a.policy.policy.(limit.LeakyBucket); ok && lb.Mode == limit.Shape {
			if limitCap < 0 || a.rule.maxDelay < limitCap {
				limitCap = a.rule.maxDelay
			}
		}
	}
	if limitCap < 0 { // no shaping policy: the decisive rule's
		return r.at(r.Decision.Index).rule.maxDelay
	}
	return limitCap
}

func (r *Result) add(a applied) {
	if r.n < inlineApplied {
		r.inline[r.n] = a
	} else {
		r.spill = append(r.spill, a)
	}
	r.n++
}

func (r *Result) at(i int) *applied {
	if i < inlineApplied {
		return &r.inline[i]
	}
	return &r.spill[i-inlineApplied]
}

// Matched reports whether any rule (enforced or shadow) applied.
func (r *Result) Matched() bool { return r.n > 0 }

// Refused reports whether the request must be answered with Refusal: an
// enforced rule refused, or the store returned an error and the failure
// mode of a matched enforced rule (Config.OnErrorOf) is "closed".
func (r *Result) Refused() bool {
	return r.Outcome == Refused || r.Outcome == Errored && r.failClosed
}

// Rule returns the name of the rule whose policy decided (the most
// restrictive enforced one), or "" when no enforced rule matched.
func (r *Result) Rule() string {
	if r.enforced == 0 {
		return ""
	}
	return r.at(r.Decision.Index).rule.name
}

// Policy returns the name of the most restrictive enforced policy, or ""
// when no enforced rule matched.
func (r *Result) Policy() string {
	if r.enforced == 0 {
		return ""
	}
	return r.at(r.Decision.Index).policy.name
}

// AppendViolatedPolicies appends to dst the names of the enforced policies
// that refused: the most restrictive one (a store reports one). Nothing
// unless Outcome is Refused.
func (r *Result) AppendViolatedPolicies(dst []string) []string {
	if r.Outcome != Refused || r.enforced == 0 {
		return dst
	}
	return append(dst, r.at(r.Decision.Index).policy.name)
}

// resetSeconds is the t of the RateLimit field and the reset of the older
// fields: on a refusal, when this request could pass (never earlier than
// Retry-After points, as draft-10 asks); when nothing is left, when one
// unit is back (a pacing client waits that long, not for a token bucket's
// whole refill); otherwise when the full allowance is back. Whole
// seconds, rounded up.
func resetSeconds(d limit.Decision) int64 { return CeilSeconds(resetAfter(d)) }

// resetAfter is the wait resetSeconds rounds: until the refused request
// may pass, until one unit is back, or until the allowance is whole again.
func resetAfter(d limit.Decision) time.Duration {
	switch {
	case !d.Allowed && d.RetryAfter != limit.Never:
		return d.RetryAfter
	case d.Remaining == 0 && d.NextUnitAfter > 0:
		return d.NextUnitAfter
	}
	return d.ResetAfter
}

// retryAfterSeconds is the Retry-After of a refusal: delay-seconds rounded
// up, at least 1. A request that can never pass (cost above capacity) is
// told the time until the full allowance is back.
func retryAfterSeconds(d limit.Decision) int64 {
	ra := d.RetryAfter
	if ra == limit.Never {
		ra = d.ResetAfter
	}
	return max(CeilSeconds(ra), 1)
}

// AppendHeaders appends the response header fields for this result to dst
// and returns it: the configured rate-limit styles (for the enforced
// policies, and for shadow rules with ShadowHeaders), and on a refusal
// Retry-After (delay-seconds, rounded up) and Cache-Control: no-store.
// Values fixed by the configuration are built once by New; the per-request
// values share a single allocation (AppendRawHeaders has none).
func (r *Result) AppendHeaders(dst []Header) []Header {
	var rb [10]RawHeader
	var vb [128]byte
	raw, buf := r.AppendRawHeaders(rb[:0], vb[:0])
	if len(raw) == 0 {
		return dst
	}
	// One string for every per-request value, sliced.
	s := string(buf)
	for _, h := range raw {
		v := h.Value
		if h.End > 0 {
			v = s[h.Start:h.End]
		}
		dst = append(dst, Header{Name: h.Name, Value: v})
	}
	return dst
}

// RawHeader is a response header field whose value, unless fixed by the
// configuration, is held in a caller's buffer (see AppendRawHeaders).
type RawHeader struct {
	// Name is the field name in canonical form.
	Name string
	// Value is the value when the configuration fixes it.
	Value string
	// Start and End delimit the value in the buffer when End > 0 (the
	// value is then never empty).
	Start, End int
}

// AppendRawHeaders appends the same fields as AppendHeaders to dst, with
// the per-request values written into buf rather than into a new string,
// and returns both grown: for a field with End > 0 the value is
// buf[Start:End]. It allocates nothing when dst and buf have room (ten
// fields and 128 bytes always do), which suits a response writer that
// copies header values, as fasthttp's does.
func (r *Result) AppendRawHeaders(dst []RawHeader, buf []byte) ([]RawHeader, []byte) {
	e := r.e
	if e == nil || r.n == 0 {
		return dst, buf
	}
	// The listed policies are the enforced ones and the shadow ones shown
	// in headers. The reported one is the enforced decision's, or the
	// shadow decision's when no enforced rule matched.
	var dec limit.Decision
	var top *applied
	switch {
	case r.Outcome == Errored:
		// The store failed: there are no counts to report.
	case r.enforced > 0:
		dec, top = r.Decision, r.at(r.Decision.Index)
	case r.shadowMatched && r.at(r.Shadow.Index).rule.headers:
		dec, top = r.Shadow, r.at(r.Shadow.Index)
	}
	refused := r.Refused()
	if top == nil && !refused {
		return dst, buf
	}
	// Each per-request value is written at the end of buf and runs from
	// start to the end of buf when mark is called. The values are the
	// one field writer's (fields.go).
	start := len(buf)
	mark := func(name string) {
		dst = append(dst, RawHeader{Name: name, Start: start, End: len(buf)})
		start = len(buf)
	}
	fixed := func(name, value string) {
		dst = append(dst, RawHeader{Name: name, Value: value})
	}
	if top != nil {
		reset := resetSeconds(dec)
		if e.styleDraft10 {
			listed, only := 0, top
			for i := 0; i < r.n; i++ {
				if a := r.at(i); a.rule.headers {
					listed++
					only = a
				}
			}
			if listed == 1 {
				fixed(HeaderRateLimitPolicy, only.policy.sfItem)
			} else {
				sep := false
				for i := 0; i < r.n; i++ {
					if a := r.at(i); a.rule.headers {
						buf = AppendMember(buf, sep, a.policy.sfItem)
						sep = true
					}
				}
				mark(HeaderRateLimitPolicy)
			}
			buf = AppendRateLimitMember(buf, false, top.policy.sfName, dec.Remaining, reset)
			mark(HeaderRateLimit)
		}
		if e.styleDraft6 {
			dst, buf = AppendTrio(dst, buf, &TrioDraft6, top.policy.limitText, 0, dec.Remaining, reset)
			start = len(buf)
		}
		if e.styleLegacy {
			legacyReset := reset
			if e.resetEpoch {
				// The instant itself, rounded up once: rounding the
				// delta up first would put it a second late.
				at := e.now().Add(resetAfter(dec)).UnixNano()
				legacyReset = ceilDiv(at, int64(time.Second))
			}
			dst, buf = AppendTrio(dst, buf, &TrioLegacy, top.policy.limitText, 0, dec.Remaining, legacyReset)
			start = len(buf)
		}
	}
	if refused {
		if r.Outcome == Refused {
			buf = strconv.AppendInt(buf, retryAfterSeconds(r.Decision), 10)
			mark(HeaderRetryAfter)
		}
		fixed(HeaderCacheControl, "no-store")
	}
	return dst, buf
}

// ceilDiv is a/b rounded up, for a ≥ 0 and b > 0.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}
