package rules

import (
	"strconv"
	"time"
)

// The one writer of the rate-limit response header fields (RateLimit and
// RateLimit-Policy, the older limit/remaining/reset trio) is the
// functions below: the engine's Result writes them with it
// (AppendRawHeaders, for every HTTP front end), and so does envoy-rls,
// whose upstream-compatible headers are its modes (the upstream's field
// spellings, its configurable trio names, RateLimit listing every
// descriptor). They append to a caller's RawHeaders and value buffer, and
// with room in both allocate nothing.

// AppendMember appends a list member (a RateLimit-Policy item, built by
// AppendPolicyItem) to b, after ", " when sep.
func AppendMember(b []byte, sep bool, item string) []byte {
	if sep {
		b = append(b, ", "...)
	}
	return append(b, item...)
}

// AppendRateLimitMember appends a RateLimit list member,
// name;r=REMAINING;t=RESET (draft-10), to b, after ", " when sep: name is
// a structured-field String (quoted), the integers are capped at the
// largest structured-field Integer.
func AppendRateLimitMember(b []byte, sep bool, name string, remaining, reset int64) []byte {
	if sep {
		b = append(b, ", "...)
	}
	b = append(b, name...)
	b = append(b, ";"+paramRemaining+"="...)
	b = strconv.AppendInt(b, min(remaining, maxSFInt), 10)
	b = append(b, ";"+paramReset+"="...)
	return strconv.AppendInt(b, min(reset, maxSFInt), 10)
}

// AppendPolicyItem appends a RateLimit-Policy list member to b,
// name;q=QUOTA;w=WINDOW (draft-10): name a structured-field String
// (quoted), the window in whole seconds rounded up and left out when it
// is zero, the integers capped at the largest structured-field Integer.
// It is fixed by the configuration: build it once.
func AppendPolicyItem(b []byte, name string, quota int64, window time.Duration) []byte {
	b = append(b, name...)
	b = append(b, ";"+paramQuota+"="...)
	b = strconv.AppendInt(b, min(quota, maxSFInt), 10)
	if w := CeilSeconds(window); w > 0 {
		b = append(b, ";"+paramWindow+"="...)
		b = strconv.AppendInt(b, min(w, maxSFInt), 10)
	}
	return b
}

// TrioNames name the older three fields: the quota, what is left of it,
// and the seconds until it resets (or the instant, as the engine's
// headers.reset epoch writes it).
type TrioNames struct {
	Limit, Remaining, Reset string
}

// The trios the engine writes: draft 6's RateLimit-* (style draft6) and
// the X-RateLimit-* of GitHub and others (style legacy). envoy-rls names
// its own (envoyproxy/ratelimit's configurable names).
var (
	TrioDraft6 = TrioNames{HeaderRateLimitLimit, HeaderRateLimitRemaining, HeaderRateLimitReset}
	TrioLegacy = TrioNames{HeaderXRateLimitLimit, HeaderXRateLimitRemaining, HeaderXRateLimitReset}
)

// AppendTrio appends the three older fields to dst, their values written
// at the end of buf: the limit (limitText when the configuration fixes
// it, else limit in decimal), remaining and reset, in decimal.
func AppendTrio(dst []RawHeader, buf []byte, names *TrioNames, limitText string, limit, remaining, reset int64) ([]RawHeader, []byte) {
	start := len(buf)
	if limitText != "" {
		dst = append(dst, RawHeader{Name: names.Limit, Value: limitText})
	} else {
		buf = strconv.AppendInt(buf, limit, 10)
		dst = append(dst, RawHeader{Name: names.Limit, Start: start, End: len(buf)})
		start = len(buf)
	}
	buf = strconv.AppendInt(buf, remaining, 10)
	dst = append(dst, RawHeader{Name: names.Remaining, Start: start, End: len(buf)})
	start = len(buf)
	buf = strconv.AppendInt(buf, reset, 10)
	return append(dst, RawHeader{Name: names.Reset, Start: start, End: len(buf)}), buf
}
