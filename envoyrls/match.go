package envoyrls

import (
	"strings"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
)

// Match is the outcome of looking a descriptor up in Limits.
type Match struct {
	// Limit is the descriptor's limit; nil when nothing matches.
	Limit *Limit
	// Shared holds, per entry, the wildcard value that replaces the
	// entry's value in the counter key ("" to keep the value): the
	// share_threshold levels the descriptor matched through.
	Shared []string
	// Detailed is true when the metric label is to carry the request's
	// values (detailed_metric, or value_to_metric on a level matched).
	Detailed bool
}

// Match finds the limit of a descriptor's entries in domain as
// envoyproxy/ratelimit's GetLimit does: level by level, an entry matches
// the child "key_value", else the first wildcard child (a value ending in
// '*') whose prefix begins "key_value", else the child "key" (any value); the limit is the
// one at the level of the last entry, and none when the descriptor has
// more entries than the tree has levels or a level does not match.
// It does not allocate unless a share_threshold level matches or an
// entry's key and value together exceed 255 bytes.
func (l *Limits) Match(domain string, entries []*rlv3.RateLimitDescriptor_Entry) Match {
	var m Match
	n := l.domains[domain]
	if n == nil {
		return m
	}
	for i, e := range entries {
		next, wildKey := n.child(e.GetKey(), e.GetValue())
		if next == nil {
			return Match{}
		}
		if wildKey != "" && next.shareThreshold {
			if m.Shared == nil {
				m.Shared = make([]string, len(entries))
			}
			m.Shared[i] = strings.TrimPrefix(next.pattern, e.GetKey()+"_")
		}
		if next.valueToMetric {
			m.Detailed = true
		}
		if i == len(entries)-1 {
			m.Limit = next.limit
			if m.Limit != nil && m.Limit.DetailedMetric {
				m.Detailed = true
			}
			return m
		}
		if len(next.children) == 0 {
			return Match{}
		}
		n = next
	}
	return Match{}
}

// child is n's child for one entry, and the wildcard key it matched
// through ("" for an exact or key-only match).
func (n *node) child(key, value string) (*node, string) {
	// The composite "key_value" is built in a stack buffer: a map index
	// by string(bytes) does not copy, so nothing is allocated below
	// compositeBuf bytes.
	var buf [compositeBuf]byte
	b := append(append(append(buf[:0], key...), '_'), value...)
	if c := n.children[string(b)]; c != nil {
		return c, ""
	}
	for _, w := range n.wildcards {
		if (composite{key, value}).hasPrefix(w.prefix) {
			return n.children[w.key], w.key
		}
	}
	return n.children[key], ""
}

// compositeBuf is the longest "key_value" matched without allocating.
const compositeBuf = 256

// composite is key+"_"+value, read without concatenating.
type composite struct{ key, value string }

func (c composite) len() int { return len(c.key) + 1 + len(c.value) }

func (c composite) at(i int) byte {
	switch {
	case i < len(c.key):
		return c.key[i]
	case i == len(c.key):
		return '_'
	}
	return c.value[i-len(c.key)-1]
}

func (c composite) hasPrefix(p string) bool {
	if len(p) > c.len() {
		return false
	}
	for i := 0; i < len(p); i++ {
		if c.at(i) != p[i] {
			return false
		}
	}
	return true
}
