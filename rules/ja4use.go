package rules

import "fmt"

// JA4Use reports where r reads the request's TLS fingerprint, as a rule
// path relative to the rule ("key[0]", "match.ja4", "except[1].key",
// "cost.by[0].match.ja4", "tiers.identity[0]"), or false when it never
// does. A front end that never sees the client's TLS handshake
// (forward-auth) refuses such a rule: there a ja4 key part is always
// missing and a ja4 matcher never matches, so the rule would silently
// limit, exempt or cost nothing. Config.JA4Use checks a whole
// configuration, Engine.JA4Rule a compiled one.
func (r *Rule) JA4Use() (string, bool) {
	for i, p := range r.Key {
		if p == "ja4" {
			return fmt.Sprintf("key[%d]", i), true
		}
	}
	if len(r.Match.JA4) > 0 {
		return "match.ja4", true
	}
	if at, ok := exceptJA4(r.Except); ok {
		return at, true
	}
	for i := range r.Cost.By {
		if len(r.Cost.By[i].Match.JA4) > 0 {
			return fmt.Sprintf("cost.by[%d].match.ja4", i), true
		}
	}
	if r.Tiers != nil {
		for i, p := range r.Tiers.Identity {
			if p == "ja4" {
				return fmt.Sprintf("tiers.identity[%d]", i), true
			}
		}
	}
	return "", false
}

// JA4Use reports the first place of c that reads the request's TLS
// fingerprint (Rule.JA4Use), as a rule path from the top
// ("rules[2].match.ja4", "except[0].ja4"), or false when none does.
func (c *Config) JA4Use() (string, bool) {
	if at, ok := exceptJA4(c.Except); ok {
		return at, true
	}
	for i := range c.Rules {
		if at, ok := c.Rules[i].JA4Use(); ok {
			return fmt.Sprintf("rules[%d].%s", i, at), true
		}
	}
	return "", false
}

// exceptJA4 is JA4Use for an except list: an entry's ja4 matcher, or a
// key list of the ja4 part.
func exceptJA4(list []Except) (string, bool) {
	for i := range list {
		if len(list[i].JA4) > 0 {
			return fmt.Sprintf("except[%d].ja4", i), true
		}
		if list[i].Key == "ja4" {
			return fmt.Sprintf("except[%d].key", i), true
		}
	}
	return "", false
}

// JA4Rule returns the name of the first rule (enforced or shadow) that
// reads the request's TLS fingerprint: a ja4 key part in its key, tier
// identity or an except entry's key list, or a ja4 matcher in its match,
// except or cost.by (see Rule.JA4Use). A ja4 matcher in the top-level
// except is reported with the name "" and true.
func (e *Engine) JA4Rule() (string, bool) {
	if exceptsJA4(e.except) {
		return "", true
	}
	for _, rs := range [][]*compiledRule{e.enforced, e.shadow} {
		for _, r := range rs {
			if r.readsJA4() {
				return r.name, true
			}
		}
	}
	return "", false
}

func (r *compiledRule) readsJA4() bool {
	if partsJA4(r.key) || len(r.match.geo.ja4) > 0 || exceptsJA4(r.except) {
		return true
	}
	for i := range r.cost.by {
		if len(r.cost.by[i].match.geo.ja4) > 0 {
			return true
		}
	}
	return r.tiers != nil && partsJA4(r.tiers.identity)
}

func exceptsJA4(list []compiledExcept) bool {
	for i := range list {
		if len(list[i].match.geo.ja4) > 0 || partsJA4(list[i].part) {
			return true
		}
	}
	return false
}

func partsJA4(ps []keyPart) bool {
	for _, p := range ps {
		if p.kind == partJA4 {
			return true
		}
	}
	return false
}
