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

	e             *Engine
	path          string
	enforced      int // applied[:enforced] are the enforced policies
	n             int // applied count: enforced, then shadow
	shadowMatched bool
	inline        [inlineApplied]applied
	spill         []applied
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
// enforced rule refused, or the store failed and Config.OnStoreError is
// "refuse".
func (r *Result) Refused() bool {
	return r.Outcome == Refused || r.Outcome == Errored && r.e != nil && r.e.failClosed
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
// Retry-After points, as draft-10 asks); otherwise when the full allowance
// is back. Whole seconds, rounded up.
func resetSeconds(d limit.Decision) int64 {
	if !d.Allowed && d.RetryAfter != limit.Never {
		return ceilSeconds(d.RetryAfter)
	}
	return ceilSeconds(d.ResetAfter)
}

// retryAfterSeconds is the Retry-After of a refusal: delay-seconds rounded
// up, at least 1. A request that can never pass (cost above capacity) is
// told the time until the full allowance is back.
func retryAfterSeconds(d limit.Decision) int64 {
	ra := d.RetryAfter
	if ra == limit.Never {
		ra = d.ResetAfter
	}
	return max(ceilSeconds(ra), 1)
}

// AppendHeaders appends the response header fields for this result to dst
// and returns it: the configured rate-limit styles (for the enforced
// policies, and for shadow rules with ShadowHeaders), and on a refusal
// Retry-After (delay-seconds, rounded up) and Cache-Control: no-store.
// Values fixed by the configuration are built once by New; the per-request
// values share a single allocation.
func (r *Result) AppendHeaders(dst []Header) []Header {
	e := r.e
	if e == nil || r.n == 0 {
		return dst
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
		return dst
	}
	// Phase one writes every per-request value into buf and records
	// where each ends; phase two turns buf into one string and slices it.
	// Fixed values are appended with Value set and end < 0.
	first := len(dst)
	var b [128]byte
	buf := b[:0]
	var ends [8]int
	ne := 0
	mark := func(name string) {
		dst = append(dst, Header{Name: name})
		ends[ne] = len(buf)
		ne++
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
				dst = append(dst, Header{Name: HeaderRateLimitPolicy, Value: only.policy.sfItem})
			} else {
				sep := false
				for i := 0; i < r.n; i++ {
					if a := r.at(i); a.rule.headers {
						if sep {
							buf = append(buf, ", "...)
						}
						sep = true
						buf = append(buf, a.policy.sfItem...)
					}
				}
				mark(HeaderRateLimitPolicy)
			}
			buf = append(buf, top.policy.sfName...)
			buf = append(buf, ";"+paramRemaining+"="...)
			buf = strconv.AppendInt(buf, min(dec.Remaining, maxSFInt), 10)
			buf = append(buf, ";"+paramReset+"="...)
			buf = strconv.AppendInt(buf, min(reset, maxSFInt), 10)
			mark(HeaderRateLimit)
		}
		if e.styleDraft6 {
			dst = append(dst, Header{Name: HeaderRateLimitLimit, Value: top.policy.limitText})
			buf = strconv.AppendInt(buf, dec.Remaining, 10)
			mark(HeaderRateLimitRemaining)
			buf = strconv.AppendInt(buf, reset, 10)
			mark(HeaderRateLimitReset)
		}
		if e.styleLegacy {
			dst = append(dst, Header{Name: HeaderXRateLimitLimit, Value: top.policy.limitText})
			buf = strconv.AppendInt(buf, dec.Remaining, 10)
			mark(HeaderXRateLimitRemaining)
			if e.resetEpoch {
				now := e.now()
				at := now.Add(time.Duration(reset) * time.Second).Unix()
				if now.Nanosecond() != 0 {
					at++ // round up, as the delta is
				}
				buf = strconv.AppendInt(buf, at, 10)
			} else {
				buf = strconv.AppendInt(buf, reset, 10)
			}
			mark(HeaderXRateLimitReset)
		}
	}
	if refused {
		if r.Outcome == Refused {
			buf = strconv.AppendInt(buf, retryAfterSeconds(r.Decision), 10)
			mark(HeaderRetryAfter)
		}
		dst = append(dst, Header{Name: HeaderCacheControl, Value: "no-store"})
	}
	if ne == 0 {
		return dst
	}
	s := string(buf)
	start, k := 0, 0
	for i := first; i < len(dst); i++ {
		if dst[i].Value == "" {
			dst[i].Value = s[start:ends[k]]
			start = ends[k]
			k++
		}
	}
	return dst
}
