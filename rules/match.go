package rules

import (
	"fmt"
	"net/textproto"
	"slices"
	"strings"
)

// matcher is a compiled Match. The zero matcher matches everything.
type matcher struct {
	methods  []string
	hosts    []hostPattern
	paths    []string
	prefixes []string
	patterns []pattern
	headers  []headerMatch
	geo      geoMatcher // countries, asns, ja4 (geo.go)
}

type hostPattern struct {
	name     string // lower-case; for a wildcard, the suffix with its dot
	wildcard bool
}

type headerMatch struct {
	name, value string // name canonical
}

// compileMatch compiles m, reporting its problems under path.
func compileMatch(m Match, path string, ps *problems) matcher {
	at := func(field string, i int) string { return fmt.Sprintf("%s.%s[%d]", path, field, i) }
	var c matcher
	for i, meth := range m.Methods {
		if !isToken(meth) {
			ps.add(at("methods", i), "%q is not a method", meth)
		}
		c.methods = append(c.methods, meth)
	}
	for i, h := range m.Hosts {
		// A configured "api.example.com." is the host a request's
		// trailing dot is trimmed from (hostOnly).
		h = strings.ToLower(strings.TrimSpace(h))
		if len(h) > 1 && strings.HasSuffix(h, ".") {
			h = h[:len(h)-1]
		}
		switch {
		case strings.HasPrefix(h, "*.") && len(h) > 2 && !strings.Contains(h[2:], "*"):
			c.hosts = append(c.hosts, hostPattern{name: h[1:], wildcard: true})
		case h == "" || strings.ContainsAny(h, "*/ "):
			ps.add(at("hosts", i), "%q is not a host name or *.domain", m.Hosts[i])
		default:
			c.hosts = append(c.hosts, hostPattern{name: h})
		}
	}
	for i, p := range m.Paths {
		if !strings.HasPrefix(p, "/") {
			ps.add(at("paths", i), "%q does not start with /", p)
		}
		c.paths = append(c.paths, p)
	}
	for i, p := range m.PathPrefixes {
		if !strings.HasPrefix(p, "/") {
			ps.add(at("path_prefixes", i), "%q does not start with /", p)
		}
		c.prefixes = append(c.prefixes, p)
	}
	for i, s := range m.Patterns {
		p, err := parsePattern(s)
		if err != nil {
			ps.add(at("patterns", i), "%v", err)
			continue
		}
		c.patterns = append(c.patterns, p)
	}
	for i, h := range m.Headers {
		if !isToken(h.Name) {
			ps.add(at("headers", i)+".name", "%q is not a header name", h.Name)
			continue
		}
		c.headers = append(c.headers, headerMatch{name: textproto.CanonicalMIMEHeaderKey(h.Name), value: h.Value})
	}
	c.geo = compileGeoMatch(m, path, ps)
	return c
}

// match reports whether req matches, given its host without port, by
// its shape only: the engine calls matches, which checks geo too.
func (m *matcher) match(req Request, method, host, path string) bool {
	if len(m.methods) > 0 && !slices.Contains(m.methods, method) {
		return false
	}
	if len(m.hosts) > 0 {
		ok := false
		for _, h := range m.hosts {
			if h.matches(host) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if len(m.paths) > 0 && !slices.Contains(m.paths, path) {
		return false
	}
	if len(m.prefixes) > 0 {
		ok := false
		for _, p := range m.prefixes {
			if strings.HasPrefix(path, p) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if len(m.patterns) > 0 {
		ok := false
		for i := range m.patterns {
			if m.patterns[i].matches(method, host, path) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	for _, h := range m.headers {
		v, ok := firstHeader(req, h.name)
		if !ok || v == "" || h.value != "" && v != h.value {
			return false
		}
	}
	return true
}

func (h hostPattern) matches(host string) bool {
	if h.wildcard {
		return len(host) > len(h.name) && strings.EqualFold(host[len(host)-len(h.name):], h.name)
	}
	return strings.EqualFold(host, h.name)
}

// HostOnly returns host (a Host field or an authority) without its port,
// IPv6 brackets and the trailing dot of a fully qualified name:
// "api.example.com." names the same host as "api.example.com", and must
// match the same rules and share its counters. "[::1]:8080" gives "::1".
// It is the one host normalisation of the rule engine and the gateway's
// routes, so that both match the same requests. It returns a part of
// host and does not allocate.
func HostOnly[T string | []byte](host T) T {
	if len(host) > 0 && host[0] == '[' {
		for i := 1; i < len(host); i++ {
			if host[i] == ']' {
				return host[1:i]
			}
		}
		return host
	}
	colons, last := 0, -1
	for i := 0; i < len(host); i++ {
		if host[i] == ':' {
			colons, last = colons+1, i
		}
	}
	if colons == 1 {
		host = host[:last]
	}
	if n := len(host); n > 1 && host[n-1] == '.' {
		host = host[:n-1]
	}
	return host
}

// isToken reports whether s is a non-empty RFC 9110 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}
