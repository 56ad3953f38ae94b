package rules

import (
	"errors"
	"fmt"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/tollgate-dev/tollgate/limit"
)

// NoAnswerStatus is the status a counting rule (Rule.Count) sees for a
// request that got no answer (Result.Charge with status 0: the upstream
// failed, timed out or the client went away): 502, what the gateway
// answers then.
const NoAnswerStatus = 502

// maxStatuses bounds a Count's status list.
const maxStatuses = 64

// StatusRange is an inclusive range of HTTP status codes, as a Count
// status spec gives it: "401" is 401-401, "4xx" 400-499, "500-599"
// itself.
type StatusRange struct{ Lo, Hi int }

// Contains reports whether status is in the range.
func (r StatusRange) Contains(status int) bool { return status >= r.Lo && status <= r.Hi }

// String is the range in spec form: "401", "4xx" or "500-503".
func (r StatusRange) String() string {
	switch {
	case r.Lo == r.Hi:
		return strconv.Itoa(r.Lo)
	case r.Lo%100 == 0 && r.Hi == r.Lo+99:
		return strconv.Itoa(r.Lo/100) + "xx"
	}
	return strconv.Itoa(r.Lo) + "-" + strconv.Itoa(r.Hi)
}

// errStatusSpec is what every bad status spec wraps.
var errStatusSpec = errors.New("want a status (401), a class (4xx) or a range (500-599) of codes 100-599")

// ParseStatusSpec parses one entry of Count.Statuses: a status code
// ("401"), a class ("4xx", "5XX") or an inclusive range ("500-599"),
// codes 100 to 599. Surrounding spaces are ignored.
func ParseStatusSpec(s string) (StatusRange, error) {
	t := strings.TrimSpace(s)
	if len(t) > 16 {
		return StatusRange{}, fmt.Errorf("%.16q...: %w", t, errStatusSpec)
	}
	if len(t) == 3 && (t[1] == 'x' || t[1] == 'X') && (t[2] == 'x' || t[2] == 'X') {
		if t[0] < '1' || t[0] > '5' {
			return StatusRange{}, fmt.Errorf("%q: %w", t, errStatusSpec)
		}
		lo := int(t[0]-'0') * 100
		return StatusRange{lo, lo + 99}, nil
	}
	lo, hi, isRange := strings.Cut(t, "-")
	a, ok := statusCode(lo)
	if !ok {
		return StatusRange{}, fmt.Errorf("%q: %w", t, errStatusSpec)
	}
	if !isRange {
		return StatusRange{a, a}, nil
	}
	b, ok := statusCode(hi)
	if !ok {
		return StatusRange{}, fmt.Errorf("%q: %w", t, errStatusSpec)
	}
	if b < a {
		return StatusRange{}, fmt.Errorf("%q: the range ends before it starts", t)
	}
	return StatusRange{a, b}, nil
}

// statusCode parses three decimal digits, 100 to 599.
func statusCode(s string) (int, bool) {
	s = strings.TrimSpace(s)
	if len(s) != 3 {
		return 0, false
	}
	n := 0
	for i := 0; i < 3; i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n >= 100 && n <= 599
}

// compiledCount is a Rule.Count: which answers are charged.
type compiledCount struct {
	statuses    []StatusRange // empty: any status
	header      string        // canonical name; "" for none
	headerValue string        // "" means present and non-empty
}

// counts reports whether the answer (status, with NoAnswerStatus for 0,
// and header fields h, which may be nil) is one the rule charges.
func (c *compiledCount) counts(status int, h AnswerHeader) bool {
	if status == 0 {
		status = NoAnswerStatus
	}
	if len(c.statuses) > 0 {
		in := false
		for _, r := range c.statuses {
			if r.Contains(status) {
				in = true
				break
			}
		}
		if !in {
			return false
		}
	}
	if c.header != "" {
		if h == nil {
			return false
		}
		v, ok := h.Header(c.header)
		if !ok || (c.headerValue == "" && v == "") || (c.headerValue != "" && v != c.headerValue) {
			return false
		}
	}
	return true
}

// compileCount validates the Count of rule r (at path rule) and its
// policies (compiled into cr): a counting rule cannot delay or hold
// slots.
func compileCount(r *Rule, cr *compiledRule, rule string, ps *problems) *compiledCount {
	c, where := r.Count, rule+".count"
	cc := &compiledCount{}
	if len(c.Statuses) == 0 && c.Header.Name == "" {
		ps.add(where, "names no answer to count: set statuses (e.g. [\"401\", \"403\"]) or a header")
	}
	if len(c.Statuses) > maxStatuses {
		ps.add(where+".statuses", "%d entries: at most %d", len(c.Statuses), maxStatuses)
	}
	for i, s := range c.Statuses {
		if i >= maxStatuses {
			break
		}
		r, err := ParseStatusSpec(s)
		if err != nil {
			ps.add(fmt.Sprintf("%s.statuses[%d]", where, i), "%w", err)
			continue
		}
		cc.statuses = append(cc.statuses, r)
	}
	if c.Header.Name != "" {
		cc.header = textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(c.Header.Name))
		cc.headerValue = c.Header.Value
		if !validFieldName(cc.header) {
			ps.add(where+".header.name", "%q is not a header field name", c.Header.Name)
		}
	} else if c.Header.Value != "" {
		ps.add(where+".header.value", "set without a header name")
	}
	if len(cr.conc) > 0 {
		ps.add(where, "a counting rule cannot hold concurrency slots (they are taken before the answer): put the concurrency policy in a rule of its own")
	}
	shaping := func(list []Policy, at string) {
		for i, p := range list {
			if p.Algorithm == limit.AlgLeakyBucket.String() && (p.Mode == "" || strings.EqualFold(p.Mode, "shape")) {
				ps.add(fmt.Sprintf("%s[%d].mode", at, i), "a counting rule cannot delay (it charges after the answer): use mode police")
			}
		}
	}
	shaping(r.Policies, rule+".policies")
	if r.Tiers != nil {
		for _, plan := range sortedKeys(r.Tiers.Plans) {
			shaping(r.Tiers.Plans[plan], rule+".tiers.plans."+plan)
		}
	}
	return cc
}

// validFieldName reports whether s is an RFC 9110 token of at most 128
// bytes.
func validFieldName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			continue
		}
		if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

// Describe is the count in words, for `tollgate check`: "answers 401,
// 403" or "answers 4xx with header X-Login-Failed".
func (c *Count) Describe() string {
	var b strings.Builder
	b.WriteString("answers")
	for i, s := range c.Statuses {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte(' ')
		if r, err := ParseStatusSpec(s); err == nil {
			b.WriteString(r.String())
		} else {
			b.WriteString(strings.TrimSpace(s))
		}
	}
	if c.Header.Name != "" {
		if len(c.Statuses) == 0 {
			b.WriteString(" of any status")
		}
		b.WriteString(" with header ")
		b.WriteString(textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(c.Header.Name)))
		if c.Header.Value != "" {
			b.WriteString(": ")
			b.WriteString(strconv.Quote(c.Header.Value))
		}
	}
	return b.String()
}
