package client

import (
	"net/http"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"
)

// Parameter names of draft-ietf-httpapi-ratelimit-headers-10, kept in one
// place: an open proposal (PR #166) would rename r to a and t to w.
const (
	paramRemaining = "r" // RateLimit: remaining quota units
	paramReset     = "t" // RateLimit: seconds until more quota is available
	paramQuota     = "q" // RateLimit-Policy: quota units per window
	paramWindow    = "w" // RateLimit-Policy: window in seconds
)

// Field names in canonical form (textproto.CanonicalMIMEHeaderKey), so the
// header map is indexed without canonicalising, which would allocate.
const (
	fieldRateLimit          = "Ratelimit"
	fieldRateLimitPolicy    = "Ratelimit-Policy"
	fieldRateLimitRemaining = "Ratelimit-Remaining"
	fieldRateLimitReset     = "Ratelimit-Reset"
)

// xFields are the de-facto X-RateLimit-* spellings: remaining, reset.
var xFields = [...][2]string{
	{"X-Ratelimit-Remaining", "X-Ratelimit-Reset"},
	{"X-Rate-Limit-Remaining", "X-Rate-Limit-Reset"},
}

// Allowance is what a response's rate-limit fields say about the quota
// left: Remaining units now, more available after Reset. When several
// policies are reported, it is the most restrictive one (the least
// remaining; then the longest reset).
type Allowance struct {
	// Remaining is the quota left, in the policy's units (usually
	// requests). Zero means the next request would be refused.
	Remaining int64
	// Reset is the time until more quota becomes available, measured from
	// the instant the response was read. Zero when the fields do not say.
	Reset time.Duration
	// Policy is the draft-10 policy name the figures belong to; empty for
	// the older fields.
	Policy string
}

// spent reports whether a's allowance is used up until a known reset.
func (a Allowance) spent() bool { return a.Remaining == 0 && a.Reset > 0 }

// tighter reports whether a is more restrictive than b.
func (a Allowance) tighter(b Allowance) bool {
	if a.Remaining != b.Remaining {
		return a.Remaining < b.Remaining
	}
	return a.Reset > b.Reset
}

// ParseAllowance reads the rate-limit fields of a response received at now
// and returns the most restrictive allowance they state: the least
// remaining, and of equal counts the reset of the most precise field, in
// the order below. A server sending several styles states one allowance
// in each, and the later ones are coarser: X-RateLimit-Reset as an epoch
// is rounded up to a whole second and read on the client's clock, up to a
// second or more later than the RateLimit field's delta. (Within one
// field listing several policies, the least remaining and then the
// longest reset.) It understands:
//
//   - RateLimit and RateLimit-Policy of draft-ietf-httpapi-ratelimit-headers
//     -08 to -10 (Lists of Items named by a String, parameters r and t; w of
//     the matching policy stands in for a missing t);
//   - the -07 RateLimit Dictionary (limit, remaining, reset);
//   - RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (-00 to -06,
//     delay-seconds);
//   - X-RateLimit-Remaining and X-RateLimit-Reset (also spelt
//     X-Rate-Limit-*), whose reset may be delta seconds, Unix epoch seconds
//     (>= 1e9), Unix epoch milliseconds (>= 1e12) or an HTTP-date.
//
// A malformed field is ignored as a whole, as the draft requires. ok is
// false when no field yields an allowance.
func ParseAllowance(h http.Header, now time.Time) (a Allowance, ok bool) {
	consider := func(b Allowance) { // fields in order of precision
		if !ok || b.Remaining < a.Remaining {
			a, ok = b, true
		}
	}
	if v := h[fieldRateLimit]; len(v) > 0 {
		if b, found := parseRateLimitList(v, h[fieldRateLimitPolicy]); found {
			consider(b)
		} else if b, found := parseRateLimitDict(v); found {
			consider(b)
		}
	}
	if b, found := parseRateLimitItems(h); found {
		consider(b)
	}
	for _, f := range xFields {
		if b, found := parseXRateLimit(h[f[0]], h[f[1]], now); found {
			consider(b)
		}
	}
	return a, ok
}

// parseRateLimitList reads the draft -08..-10 RateLimit field: a non-empty
// List of Items, each a String policy name with a required non-negative
// Integer r and an optional non-negative Integer t. Any violation voids the
// whole field. A missing t is taken from the w of the RateLimit-Policy item
// with the same name, if that field is valid.
func parseRateLimitList(values, policyValues []string) (Allowance, bool) {
	if a, ok, handled := fastRateLimitList(values); handled {
		return a, ok
	}
	return parseRateLimitListSF(values, policyValues)
}

// parseRateLimitListSF is parseRateLimitList with the general Structured
// Field parser, for every shape fastRateLimitList does not handle.
func parseRateLimitListSF(values, policyValues []string) (Allowance, bool) {
	list, ok := sf(httpsfv.UnmarshalList, values)
	if !ok || len(list) == 0 {
		return Allowance{}, false
	}
	var out Allowance
	found := false
	var windows map[string]int64
	for _, m := range list {
		item, ok := m.(httpsfv.Item)
		if !ok {
			return Allowance{}, false
		}
		name, ok := item.Value.(string)
		if !ok {
			return Allowance{}, false
		}
		r, ok := intParam(item.Params, paramRemaining)
		if !ok {
			return Allowance{}, false
		}
		b := Allowance{Remaining: r, Policy: name}
		if _, present := item.Params.Get(paramReset); present {
			t, ok := intParam(item.Params, paramReset)
			if !ok {
				return Allowance{}, false
			}
			b.Reset = seconds(t)
		} else {
			if windows == nil {
				windows = parsePolicyWindows(policyValues)
			}
			b.Reset = seconds(windows[name])
		}
		if !found || b.tighter(out) {
			out, found = b, true
		}
	}
	return out, found
}

// parsePolicyWindows reads RateLimit-Policy into policy name -> w seconds.
// A malformed field yields an empty map: the field is informative only.
func parsePolicyWindows(values []string) map[string]int64 {
	out := map[string]int64{}
	if len(values) == 0 {
		return out
	}
	list, ok := sf(httpsfv.UnmarshalList, values)
	if !ok {
		return out
	}
	for _, m := range list {
		item, ok := m.(httpsfv.Item)
		if !ok {
			return map[string]int64{}
		}
		name, ok := item.Value.(string)
		if !ok {
			return map[string]int64{}
		}
		if _, ok := intParam(item.Params, paramQuota); !ok {
			return map[string]int64{}
		}
		if _, present := item.Params.Get(paramWindow); present {
			w, ok := intParam(item.Params, paramWindow)
			if !ok || w == 0 {
				return map[string]int64{}
			}
			out[name] = w
		}
	}
	return out
}

// sf runs one of httpsfv's parsers on a field's lines. ok is false when
// the field is malformed, including when the parser panics: httpsfv v1.1.0
// indexes past the end of some malformed input (a Date with no digits,
// "@" or "@-", found by FuzzParseAllowance), and a server's header must
// never crash the client. The parsers are pure, so nothing is left half
// done.
func sf[T any](parse func([]string) (T, error), v []string) (out T, ok bool) {
	defer func() {
		if recover() != nil {
			var zero T
			out, ok = zero, false
		}
	}()
	out, err := parse(v)
	return out, err == nil
}

// parseRateLimitDict reads the draft -07 RateLimit Dictionary
// "limit=100, remaining=50, reset=5".
func parseRateLimitDict(values []string) (Allowance, bool) {
	d, ok := sf(httpsfv.UnmarshalDictionary, values)
	if !ok {
		return Allowance{}, false
	}
	r, ok := intMember(d, "remaining")
	if !ok {
		return Allowance{}, false
	}
	b := Allowance{Remaining: r}
	if _, present := d.Get("reset"); present {
		t, ok := intMember(d, "reset")
		if !ok {
			return Allowance{}, false
		}
		b.Reset = seconds(t)
	}
	return b, true
}

// parseRateLimitItems reads the draft -00..-06 fields RateLimit-Remaining
// and RateLimit-Reset: each an Item holding a non-negative Integer
// (parameters ignored).
func parseRateLimitItems(h http.Header) (Allowance, bool) {
	rv := h[fieldRateLimitRemaining]
	if len(rv) == 0 {
		return Allowance{}, false
	}
	r, ok := intItem(rv)
	if !ok {
		return Allowance{}, false
	}
	b := Allowance{Remaining: r}
	if v := h[fieldRateLimitReset]; len(v) > 0 {
		t, ok := intItem(v)
		if !ok {
			return Allowance{}, false
		}
		b.Reset = seconds(t)
	}
	return b, true
}

// Thresholds telling an X-RateLimit-Reset epoch from a delta (a heuristic
// shared by the common clients, not a standard).
const (
	epochSeconds = 1_000_000_000     // 2001-09-09 in seconds
	epochMillis  = 1_000_000_000_000 // the same instant in milliseconds
)

// parseXRateLimit reads the values of X-RateLimit-Remaining and
// X-RateLimit-Reset (or another spelling of them).
func parseXRateLimit(remaining, v []string, now time.Time) (Allowance, bool) {
	r, ok := singleDigits(remaining)
	if !ok {
		return Allowance{}, false
	}
	b := Allowance{Remaining: r}
	if len(v) == 0 {
		return b, true
	}
	if len(v) != 1 {
		return Allowance{}, false
	}
	if n, ok := parseDigits(strings.TrimSpace(v[0])); ok {
		switch {
		case n >= epochMillis:
			b.Reset = until(time.UnixMilli(n), now)
		case n >= epochSeconds:
			b.Reset = until(time.Unix(n, 0), now)
		default:
			b.Reset = seconds(n)
		}
		return b, true
	}
	t, err := http.ParseTime(v[0])
	if err != nil {
		return Allowance{}, false
	}
	b.Reset = until(t, now)
	return b, true
}

// singleDigits reads a field that must appear once and hold 1*DIGIT.
func singleDigits(v []string) (int64, bool) {
	if len(v) != 1 {
		return 0, false
	}
	return parseDigits(strings.TrimSpace(v[0]))
}

// intItem parses an SF Item holding a non-negative Integer.
func intItem(v []string) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	item, ok := sf(httpsfv.UnmarshalItem, v)
	if !ok {
		return 0, false
	}
	n, ok := item.Value.(int64)
	return n, ok && n >= 0
}

// intParam returns parameter k when it is a non-negative Integer.
func intParam(p *httpsfv.Params, k string) (int64, bool) {
	if p == nil {
		return 0, false
	}
	v, ok := p.Get(k)
	if !ok {
		return 0, false
	}
	n, ok := v.(int64)
	return n, ok && n >= 0
}

// intMember returns dictionary member k when it is an Item holding a
// non-negative Integer.
func intMember(d *httpsfv.Dictionary, k string) (int64, bool) {
	m, ok := d.Get(k)
	if !ok {
		return 0, false
	}
	item, ok := m.(httpsfv.Item)
	if !ok {
		return 0, false
	}
	n, ok := item.Value.(int64)
	return n, ok && n >= 0
}
