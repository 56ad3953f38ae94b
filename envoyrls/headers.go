package envoyrls

import (
	"math"
	"strconv"
	"time"

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

// headerValues are a response's headers and the slice of pointers to
// them that the response holds, allocated together.
type headerValues[T any] struct {
	v T
	p [3]*corev3.HeaderValue
}

// headers returns the headers in the style of c.
func (h *headerBuilder) headers(c *Config) []*corev3.HeaderValue {
	if len(h.items) == 0 {
		return nil
	}
	switch c.Headers {
	case HeadersLegacy:
		if !h.hasPick {
			return nil
		}
		it := h.picked
		hv := new(headerValues[[3]corev3.HeaderValue])
		hv.v[0].Key, hv.v[0].Value = c.LimitHeader, strconv.FormatUint(uint64(it.limit), 10)
		hv.v[1].Key, hv.v[1].Value = c.RemainingHeader, strconv.FormatUint(uint64(it.remaining), 10)
		hv.v[2].Key, hv.v[2].Value = c.ResetHeader, strconv.FormatInt(rules.CeilSeconds(it.reset), 10)
		hv.p = [3]*corev3.HeaderValue{&hv.v[0], &hv.v[1], &hv.v[2]}
		return hv.p[:]
	case HeadersDraft10:
		var buf [256]byte
		pol := h.items[0].policyItem
		if len(h.items) > 1 {
			b := buf[:0]
			for i, it := range h.items {
				if i > 0 {
					b = append(b, ", "...)
				}
				b = append(b, it.policyItem...)
			}
			pol = string(b)
		}
		b := buf[:0]
		for i, it := range h.items {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = append(b, it.name...)
			b = strconv.AppendUint(append(b, ";r="...), uint64(it.remaining), 10)
			b = strconv.AppendInt(append(b, ";t="...), rules.CeilSeconds(it.reset), 10)
		}
		hv := new(headerValues[[2]corev3.HeaderValue])
		hv.v[0].Key, hv.v[0].Value = "RateLimit-Policy", pol
		hv.v[1].Key, hv.v[1].Value = "RateLimit", string(b)
		hv.p = [3]*corev3.HeaderValue{&hv.v[0], &hv.v[1]}
		return hv.p[:2]
	}
	return nil
}

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
