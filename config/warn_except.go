package config

import (
	"fmt"
	"net/textproto"
	"strings"

	"github.com/tollgate-dev/tollgate/rules"
)

// exceptWarnings are the except entries (a rule's, or the top-level
// ones) that exempt whoever claims to be exempt: an entry whose every
// condition is something any client sends as it likes, with nothing
// that ties it to a client. Such an entry is valid, and exempts every
// client that copies what it matches (a header, a User-Agent, a tenant
// id), so `tollgate check` says so.
//
// An entry's conditions are all required (AND), so one condition bound
// to the client makes the entry safe:
//
//   - bound: clients and clients_file (the client's address, which a
//     forwarding header sets only from a trusted proxy), countries and
//     asns (its address's), and a secret: keys or keys_file of a key
//     part that is a credential (a header or query parameter whose name
//     says API key, token, secret, password, session, signature or
//     auth, such as header:X-API-Key, header:Authorization or
//     query:api_key, or a rule's own key with such a part, or one of ip,
//     country, asn), or a header matched by its value when the header is
//     a credential (headers: [{name: X-Internal-Token, value: ...}]): an
//     API key is a secret, so listing the keys that are exempt exempts
//     their holders;
//   - claims: a header matched by its presence, or by the value of a
//     header that is not a credential (User-Agent, X-Internal,
//     X-Tenant), and keys of a header or query part that is not a
//     credential, or of ja4: any client sends them;
//   - neither: methods, hosts, paths, path_prefixes and patterns, and
//     keys of a path, method, host or gRPC part, say what is requested,
//     not who asks: an entry of only those exempts a resource (a health
//     check, a static file) from the rule, for everyone, which is what
//     it is for, and is not warned about.
//
// An entry with a claim and nothing bound is warned about at its line,
// naming the rule and the claim. A ja4 matcher has its own warning
// (geoWarnings), and so has a ja4 key list on a listener without tls
// (it never exempts): neither is warned about twice.
func (c *Config) exceptWarnings() []*Error {
	var ws []*Error
	check := func(list []rules.Except, path, rule string, ruleKey rules.Key) {
		for j := range list {
			e := &list[j]
			if c.Listen.TLS == nil && strings.EqualFold(strings.TrimSpace(e.Key), "ja4") {
				continue // it never exempts, as geoWarnings says
			}
			claim, bound := exceptClaim(e, ruleKey)
			if bound || claim == "" {
				continue
			}
			at := fmt.Sprintf("%s[%d]", path, j)
			ws = append(ws, &Error{Pos: c.at(at), Msg: fmt.Sprintf("warning: %s: %s exempts every client that sends %s: "+
				"any client can, and nothing in the entry ties it to one (no clients, clients_file, countries or asns, and no secret such as an API key); "+
				"add the clients it comes from, or exempt by a secret (keys of header:X-API-Key)", at, rule, claim)})
		}
	}
	check(c.Except, "except", "the top-level except (every rule)", nil)
	for i := range c.Rules {
		r := &c.Rules[i]
		check(r.Except, fmt.Sprintf("rules[%d].except", i), fmt.Sprintf("rule %q", r.Name), r.Key)
	}
	return ws
}

// exceptClaim classifies e (of a rule keyed by ruleKey; nil for the
// top-level except): bound when a condition is tied to the client, and
// else claim, what the client asserts ("" for nothing but what is
// requested, or only a ja4 matcher).
func exceptClaim(e *rules.Except, ruleKey rules.Key) (claim string, bound bool) {
	if len(e.Clients) > 0 || e.ClientsFile != "" || len(e.Countries) > 0 || len(e.ASNs) > 0 {
		return "", true
	}
	var claims []string
	for _, h := range e.Headers {
		name := textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(h.Name))
		switch {
		case h.Value != "" && credentialName(name):
			return "", true
		case h.Value != "":
			// The value is not quoted: warnings are logged, and one
			// that was meant as a secret would be.
			claims = append(claims, "the header "+name+" with the value configured")
		default:
			claims = append(claims, "a header "+name)
		}
	}
	if len(e.Keys) > 0 || e.KeysFile != "" {
		parts := []string{e.Key}
		if strings.TrimSpace(e.Key) == "" {
			parts = ruleKey
			if len(parts) == 0 {
				parts = []string{"ip"} // the zero Key (refused with a list: ip is listed in clients)
			}
		}
		var keyClaims []string
		for _, p := range parts {
			switch kind, name, _ := strings.Cut(strings.TrimSpace(p), ":"); strings.ToLower(kind) {
			case "ip", "country", "asn":
				return "", true
			case "header", "query":
				if credentialName(name) {
					return "", true
				}
				keyClaims = append(keyClaims, strings.TrimSpace(p))
			case "ja4":
				keyClaims = append(keyClaims, "ja4 (a TLS stack's fingerprint, which any client copies)")
			}
		}
		if len(keyClaims) > 0 {
			claims = append(claims, "a listed value of "+strings.Join(keyClaims, " and "))
		}
	}
	return strings.Join(claims, " and "), false
}

// credentialWords are what the name of a header or query parameter that
// carries a secret says (lower case): X-API-Key, Authorization,
// X-Auth-Token, api_key, access_token, Cookie (a session), X-Signature.
var credentialWords = []string{"key", "token", "secret", "password", "passwd", "auth", "session", "cookie", "signature", "credential", "jwt", "bearer"}

// credentialName reports whether a header or query parameter named name
// carries a secret, by its name.
func credentialName(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, w := range credentialWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}
