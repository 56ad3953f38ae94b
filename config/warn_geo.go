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
//     exemption is anyone's who copies it.
func (c *Config) geoWarnings() []*Error {
	var ws []*Error
	warn := func(path, format string, args ...any) {
		ws = append(ws, &Error{Pos: c.at(path), Msg: "warning: " + path + ": " + fmt.Sprintf(format, args...)})
	}
	plain := c.Listen.TLS == nil
	const noTLS = "listen has no tls, so no request has a JA4 fingerprint"
	except := func(list []rules.Except, path string) {
		for j := range list {
			at := fmt.Sprintf("%s[%d]", path, j)
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
