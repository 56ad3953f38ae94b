package config

import (
	"fmt"
	"strings"

	"github.com/tollgate-dev/tollgate/rules"
)

// geoWarnings are the JA4 uses that Parse finds valid but that probably
// do not do what their author means:
//
//   - a ja4 key part or matcher when the listener has no tls: no request
//     the gateway serves has a fingerprint, so the rule never applies
//     (a key part; with anonymous, every request shares one counter) or
//     never matches;
//   - a ja4 matcher in an except entry: a fingerprint is a TLS stack's,
//     which any client can copy (curl, Go, a headless Chromium), so the
//     exemption is anyone's who copies it;
//   - a country code that is not ISO 3166-1's but is often written for
//     one (UK for GB, EL for GR): no database carries it, so the matcher
//     never matches.
func (c *Config) geoWarnings() []*Error {
	var ws []*Error
	warn := func(path, format string, args ...any) {
		ws = append(ws, &Error{Pos: c.at(path), Msg: "warning: " + path + ": " + fmt.Sprintf(format, args...)})
	}
	plain := c.Listen.TLS == nil
	const noTLS = "listen has no tls, so no request has a JA4 fingerprint"
	countries := func(m *rules.Match, path string) {
		for k, cc := range m.Countries {
			code, _ := rules.ParseCountry(cc)
			if iso, ok := notISOCountry[code]; ok {
				warn(fmt.Sprintf("%s.countries[%d]", path, k), "%s is not an ISO 3166-1 code (databases write %s): it never matches", code, iso)
			}
		}
	}
	except := func(list []rules.Except, path string) {
		for j := range list {
			at := fmt.Sprintf("%s[%d]", path, j)
			countries(&list[j].Match, at)
			if len(list[j].JA4) > 0 {
				warn(at+".ja4", "an exemption by TLS fingerprint exempts every client that copies it (a fingerprint is a TLS stack's, not a client's): exempt by clients or keys")
			}
			if plain && strings.EqualFold(strings.TrimSpace(list[j].Key), "ja4") {
				warn(at+".key", "%s: the entry never exempts", noTLS)
			}
		}
	}
	except(c.Except, "except")
	for i := range c.Rules {
		r := &c.Rules[i]
		where := fmt.Sprintf("rules[%d]", i)
		except(r.Except, where+".except")
		countries(&r.Match, where+".match")
		for j := range r.Cost.By {
			countries(&r.Cost.By[j].Match, fmt.Sprintf("%s.cost.by[%d].match", where, j))
		}
		if !plain {
			continue
		}
		for k, p := range r.Key {
			if !strings.EqualFold(strings.TrimSpace(p), "ja4") {
				continue
			}
			if r.Anonymous {
				warn(fmt.Sprintf("%s.key[%d]", where, k), "%s: every request shares the anonymous counter", noTLS)
			} else {
				warn(fmt.Sprintf("%s.key[%d]", where, k), "%s: the rule never applies", noTLS)
			}
		}
		if len(r.Match.JA4) > 0 {
			warn(where+".match.ja4", "%s: the rule never matches", noTLS)
		}
	}
	return ws
}

// notISOCountry are two-letter codes often written for a country whose
// ISO 3166-1 code (what MaxMind's databases carry) is another.
var notISOCountry = map[string]string{
	"UK": "GB", // the United Kingdom (UK is only exceptionally reserved)
	"EL": "GR", // Greece, as the European Union writes it
}
