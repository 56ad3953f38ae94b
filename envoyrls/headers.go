package envoyrls

import (
	"math"
	"time"
	"unsafe"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/tollgate-dev/tollgate/rules"
)

// headerBuilder gathers, descriptor by descriptor, what the response
// headers say. Its first items live in the builder itself, so that a
// request of a few descriptors allocates none.
type headerBuilder struct {
	stack [4]headerItem
	items []headerItem
	// picked is the legacy trio's descriptor, chosen as
	// envoyproxy/ratelimit chooses it: the last one over its limit (not
	// in shadow or quota mode), else the first with the least remaining.
	// least is the remaining to beat.
	picked  headerItem
	least   uint32
	hasPick bool
}

type headerItem struct {
	name, policyItem string // the limit's (derived)
	limit            uint32
	remaining        uint32
	reset            time.Duration
	over             bool
}

// add records a limited descriptor's status; over is true when it makes
// the answer OVER_LIMIT.
func (h *headerBuilder) add(l *Limit, st *rlsv3.RateLimitResponse_DescriptorStatus, reset time.Duration, over bool) {
	f := l.figures()
	it := headerItem{
		name:       f.name,
		policyItem: f.policyItem,
		limit:      l.RequestsPerUnit,
		remaining:  st.GetLimitRemaining(),
		reset:      reset,
		over:       over,
	}
	least := h.least
	if !h.hasPick {
		least = math.MaxUint32
	}
	if it.remaining < least || over {
		h.picked, h.least, h.hasPick = it, it.remaining, true
		if over {
			h.least = 0
		}
	}
	for i := range h.items {
		if h.items[i].name == it.name { // one item per name: the tighter
			if it.over && !h.items[i].over || it.remaining < h.items[i].remaining {
				h.items[i] = it
			}
			return
		}
	}
	if h.items == nil {
		h.items = h.stack[:0]
	}
	h.items = append(h.items, it)
}

// headerValues are a response's headers, the slice of pointers to them
// that the response holds and the bytes of their values, allocated
// together.
type headerValues struct {
	v [3]corev3.HeaderValue
	p [3]*corev3.HeaderValue
	b [128]byte
}

// headers returns the headers in the style of c, written by the one
// writer of the rate-limit fields (rules.FieldWriter) in envoy-rls's
// modes: envoyproxy/ratelimit's trio under its configurable names for
// the picked descriptor (HeadersLegacy), or RateLimit-Policy and
// RateLimit, spelled so, listing every descriptor (HeadersDraft10).
func (h *headerBuilder) headers(c *Config) []*corev3.HeaderValue {
	if len(h.items) == 0 {
		return nil
	}
	if c.Headers == HeadersLegacy && !h.hasPick || c.Headers != HeadersLegacy && c.Headers != HeadersDraft10 {
		return nil
	}
	// The values are written into the block the response holds (a longer
	// list grows out of it) by the one field writer (rules' fields.go).
	hv := new(headerValues)
	var rb [3]rules.RawHeader
	raw, buf := rb[:0], hv.b[:0]
	switch c.Headers {
	case HeadersLegacy:
		it := &h.picked
		names := rules.TrioNames{Limit: c.LimitHeader, Remaining: c.RemainingHeader, Reset: c.ResetHeader}
		raw, buf = rules.AppendTrio(raw, buf, &names, "", int64(it.limit), int64(it.remaining), rules.CeilSeconds(it.reset))
	case HeadersDraft10:
		if len(h.items) == 1 {
			raw = append(raw, rules.RawHeader{Name: fieldPolicy, Value: h.items[0].policyItem})
		} else {
			for i := range h.items {
				buf = rules.AppendMember(buf, i > 0, h.items[i].policyItem)
			}
			raw = append(raw, rules.RawHeader{Name: fieldPolicy, Start: 0, End: len(buf)})
		}
		start := len(buf)
		for i := range h.items {
			it := &h.items[i]
			buf = rules.AppendRateLimitMember(buf, i > 0, it.name, int64(it.remaining), rules.CeilSeconds(it.reset))
		}
		raw = append(raw, rules.RawHeader{Name: fieldRateLimit, Start: start, End: len(buf)})
	}
	// The values view hv.b, never written again, unless they outgrew it
	// (read from hv.b, not buf, so that rb stays on the stack).
	var vals string
	if n := len(buf); n <= len(hv.b) {
		vals = unsafe.String(&hv.b[0], n)
	} else {
		vals = string(buf)
	}
	for i, f := range raw {
		v := f.Value
		if f.End > 0 {
			v = vals[f.Start:f.End]
		}
		hv.v[i].Key, hv.v[i].Value = f.Name, v
		hv.p[i] = &hv.v[i]
	}
	return hv.p[:len(raw)]
}

// The draft-10 field names as envoy-rls spells them (as the upstream
// does), not in Go's canonical form.
const (
	fieldPolicy    = "RateLimit-Policy"
	fieldRateLimit = "RateLimit"
)

// sfName is the limit's name as a structured-field String: its
// rate_limit name, else its configured path, with anything but printable
// ASCII (and the quote and backslash) replaced by '_'. Both come from the
// configuration, never from a request's values.
func sfName(l *Limit) string {
	n := l.Name
	if n == "" {
		n = l.Path
	}
	b := make([]byte, 0, len(n)+2)
	b = append(b, '"')
	for i := 0; i < len(n) && i < 128; i++ {
		c := n[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			c = '_'
		}
		b = append(b, c)
	}
	return string(append(b, '"'))
}
