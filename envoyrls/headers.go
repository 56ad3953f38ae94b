package envoyrls

import (
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/tollgate-dev/tollgate/rules"
)

// headerBuilder gathers, descriptor by descriptor, what the response
// headers say.
type headerBuilder struct {
	items []headerItem
	// pick is the index in items of the legacy trio's descriptor: the
	// first over the limit, else the one with the least remaining.
	pick int
}

type headerItem struct {
	name      string
	limit     uint32
	window    time.Duration
	remaining uint32
	reset     time.Duration
	over      bool
}

// add records a limited descriptor's status.
func (h *headerBuilder) add(l *Limit, st *rlsv3.RateLimitResponse_DescriptorStatus, reset time.Duration, _ int64) {
	it := headerItem{
		name:      sfName(l),
		limit:     l.RequestsPerUnit,
		window:    unitLength(l.Unit),
		remaining: st.GetLimitRemaining(),
		reset:     reset,
		over:      st.GetCode() == rlsv3.RateLimitResponse_OVER_LIMIT,
	}
	if l.Policy != nil {
		it.window = l.Policy.Quota().Window
	}
	for i := range h.items {
		if h.items[i].name == it.name { // one item per name: the tighter
			if it.over && !h.items[i].over || it.remaining < h.items[i].remaining {
				h.items[i] = it
				h.repick()
			}
			return
		}
	}
	h.items = append(h.items, it)
	h.repick()
}

func (h *headerBuilder) repick() {
	h.pick = 0
	for i, it := range h.items {
		p := h.items[h.pick]
		if it.over && !p.over || it.over == p.over && it.remaining < p.remaining {
			h.pick = i
		}
	}
}

// headers returns the headers in the style of c.
func (h *headerBuilder) headers(c *Config) []*corev3.HeaderValue {
	if len(h.items) == 0 {
		return nil
	}
	switch c.Headers {
	case HeadersLegacy:
		it := h.items[h.pick]
		return []*corev3.HeaderValue{
			headerValue(c.LimitHeader, strconv.FormatUint(uint64(it.limit), 10)),
			headerValue(c.RemainingHeader, strconv.FormatUint(uint64(it.remaining), 10)),
			headerValue(c.ResetHeader, strconv.FormatInt(rules.CeilSeconds(it.reset), 10)),
		}
	case HeadersDraft10:
		var pol, rl strings.Builder
		for i, it := range h.items {
			if i > 0 {
				pol.WriteString(", ")
				rl.WriteString(", ")
			}
			pol.WriteString(it.name)
			pol.WriteString(";q=")
			pol.WriteString(strconv.FormatUint(uint64(it.limit), 10))
			if w := rules.CeilSeconds(it.window); w > 0 {
				pol.WriteString(";w=")
				pol.WriteString(strconv.FormatInt(w, 10))
			}
			rl.WriteString(it.name)
			rl.WriteString(";r=")
			rl.WriteString(strconv.FormatUint(uint64(it.remaining), 10))
			rl.WriteString(";t=")
			rl.WriteString(strconv.FormatInt(rules.CeilSeconds(it.reset), 10))
		}
		return []*corev3.HeaderValue{
			headerValue("RateLimit-Policy", pol.String()),
			headerValue("RateLimit", rl.String()),
		}
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
