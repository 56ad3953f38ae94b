package rules

import (
	"time"

	"github.com/tollgate-dev/tollgate/limit"
)

// Header is one response header field to set. Name is in canonical form.
type Header struct {
	Name, Value string
}

// The response header field names the engine produces.
const (
	HeaderRateLimitPolicy    = "Ratelimit-Policy"
	HeaderRateLimit          = "Ratelimit"
	HeaderRateLimitLimit     = "Ratelimit-Limit"
	HeaderRateLimitRemaining = "Ratelimit-Remaining"
	HeaderRateLimitReset     = "Ratelimit-Reset"
	HeaderXRateLimitLimit    = "X-Ratelimit-Limit"
	HeaderXRateLimitRemain   = "X-Ratelimit-Remaining"
	HeaderXRateLimitReset    = "X-Ratelimit-Reset"
	HeaderRetryAfter         = "Retry-After"
	HeaderCacheControl       = "Cache-Control"
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
const inlineApplied = 8

// applied is one policy applied to a request.
type applied struct {
	rule   *compiledRule
	policy *compiledPolicy
	plan   string
}

// Result is the engine's verdict on one request and everything the response
// must carry because of it. It is a value: Decide returns it without
// allocating, and it holds no reference to the request beyond the strings
// the Request returned.
type Result struct {
	// Outcome is Allowed, Delayed, Refused or Errored; shadow rules never
	// change it. A request no rule matched is Allowed with Matched false.
	Outcome Outcome
	// Decision is the merged decision of the enforced rules: the most
	// restrictive policy's (its Policy and Index name it). Zero when no
	// enforced rule matched.
	Decision limit.Decision
	// Shadow is the merged decision of the shadow rules, if any matched.
	Shadow limit.Decision
	// Delay is how long to wait before serving a Delayed request:
	// Decision.Delay capped by the rules' MaxDelay. Zero otherwise.
	Delay time.Duration

	e        *Engine
	path     string
	enforced int // applied[:enforced] are the enforced policies
	n        int // applied count (enforced, then shadow)
	headerN  int // applied[:headerN] are shown in headers... see listed
	inline   [inlineApplied]applied
	spill    []applied
	shadowN  int
}

// Matched reports whether any rule (enforced or shadow) applied.
func (r *Result) Matched() bool { return r.n > 0 }

// Refused reports whether the request must be answered with Refusal.
func (r *Result) Refused() bool {
	return r.Outcome == Refused || r.Outcome == Errored && r.e != nil && r.e.failClosed
}

// Response is a refusal to write: status, content type and body. Headers
// (Retry-After, Cache-Control: no-store and the rate-limit fields) come
// from AppendHeaders.
type Response struct {
	Status      int
	ContentType string
	// Body is the problem+json document (or the custom body). Write it
	// only for methods other than HEAD.
	Body []byte
}

// AppendHeaders appends the response header fields for this result to dst
// and returns it: the configured rate-limit styles (for the enforced
// policies and the shadow rules with ShadowHeaders), and on a refusal
// Retry-After (delay-seconds, rounded up) and Cache-Control: no-store. The
// values of fixed fields (RateLimit-Policy, limits) are built once by New;
// the per-request values share one allocation.
func (r *Result) AppendHeaders(dst []Header) []Header {
	return dst
}

// Refusal returns the refusal to write when Refused reports true.
func (r *Result) Refusal() Response {
	return Response{}
}

// AppendViolatedPolicies appends the names of the enforced policies that
// refused (the most restrictive one; the store reports one) to dst.
func (r *Result) AppendViolatedPolicies(dst []string) []string {
	return dst
}
