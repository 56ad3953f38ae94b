package observe

import (
	"net/netip"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/redact"
)

// How client keys are shown on the dashboard and in the refusal log
// (config.Dashboard.Keys, config.RefusalLog.Keys).
const (
	KeysPlain    = "plain"
	KeysHash     = "hash"
	KeysTruncate = "truncate"
)

// keyPartSep joins a composite key's values in rules.Event.Key; the
// anonymous bucket's value starts with anonymousMark.
const (
	KeyPartSep    = "\x1f"
	AnonymousMark = "\x1e"
)

// ShowKey returns the rule engine's key value k as mode shows it: plain
// (the parts of a composite key joined by " + "), hash (redact.Key: a
// keyed hash whose key is random per process) or truncate (an IPv4
// address to its /24, an IPv6 address to its /48, any other value to its
// first 4 characters, per part). The anonymous bucket is "(anonymous)"
// whatever the mode.
func ShowKey(mode, k string) string {
	if strings.HasPrefix(k, AnonymousMark) {
		return "(anonymous)"
	}
	switch mode {
	case KeysHash:
		return redact.Key(k)
	case KeysTruncate:
		parts := strings.Split(k, KeyPartSep)
		for i, p := range parts {
			parts[i] = truncateKey(p)
		}
		return strings.Join(parts, " + ")
	}
	return strings.ReplaceAll(k, KeyPartSep, " + ")
}

// truncateKey keeps an address's network and a value's first 4
// characters.
func truncateKey(v string) string {
	if a, err := netip.ParseAddr(v); err == nil {
		bits := 24
		if a.Is6() && !a.Is4In6() {
			bits = 48
		}
		if p, err := a.Unmap().Prefix(bits); err == nil {
			return p.String()
		}
	}
	r := []rune(v)
	if len(r) <= 4 {
		return strings.Repeat("*", len(r))
	}
	return string(r[:4]) + "…"
}
