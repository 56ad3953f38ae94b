package rules

import (
	"fmt"
	"strings"
)

// pattern is a Go 1.22 net/http.ServeMux pattern, matched without
// allocating: "[METHOD ][HOST]/seg/{name}/{rest...}", "/exact/{$}", and a
// trailing slash for a subtree.
type pattern struct {
	method string
	host   string
	segs   []segment
}

type segment struct {
	lit   string
	wild  bool // {name}: one non-empty segment
	multi bool // {name...} or a trailing slash: the rest of the path
}

// parsePattern parses s in ServeMux syntax.
func parsePattern(s string) (pattern, error) {
	var p pattern
	rest := strings.TrimSpace(s)
	if i := strings.IndexAny(rest, " \t"); i >= 0 {
		p.method, rest = rest[:i], strings.TrimLeft(rest[i:], " \t")
		if !isToken(p.method) {
			return p, fmt.Errorf("%q: bad method %q", s, p.method)
		}
	}
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return p, fmt.Errorf("%q: no path (a pattern is [METHOD ][HOST]/PATH)", s)
	}
	p.host, rest = strings.ToLower(rest[:i]), rest[i+1:]
	if strings.ContainsAny(p.host, "{}") {
		return p, fmt.Errorf("%q: wildcards are not allowed in the host", s)
	}
	parts := strings.Split(rest, "/")
	seen := map[string]bool{}
	for j, part := range parts {
		last := j == len(parts)-1
		switch {
		case part == "" && last:
			p.segs = append(p.segs, segment{multi: true})
		case part == "{$}":
			if !last {
				return p, fmt.Errorf("%q: {$} must end the pattern", s)
			}
			// "/{$}" and "/a/{$}": {$} follows a slash and matches
			// the empty final segment, so the path ends there.
			p.segs = append(p.segs, segment{lit: ""})
		case strings.HasPrefix(part, "{") && strings.HasSuffix(part, "}"):
			name, multi := strings.CutSuffix(part[1:len(part)-1], "...")
			if !isIdent(name) {
				return p, fmt.Errorf("%q: bad wildcard name %q", s, name)
			}
			if seen[name] {
				return p, fmt.Errorf("%q: duplicate wildcard name %q", s, name)
			}
			seen[name] = true
			if multi && !last {
				return p, fmt.Errorf("%q: {%s...} must end the pattern", s, name)
			}
			p.segs = append(p.segs, segment{wild: !multi, multi: multi})
		case strings.ContainsAny(part, "{}"):
			return p, fmt.Errorf("%q: a wildcard must be a whole segment", s)
		default:
			p.segs = append(p.segs, segment{lit: part})
		}
	}
	return p, nil
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// matches reports whether a request matches p. As in ServeMux, a GET
// pattern also matches HEAD.
func (p *pattern) matches(method, host, path string) bool {
	if p.method != "" && method != p.method && !(p.method == "GET" && method == "HEAD") {
		return false
	}
	if p.host != "" && !strings.EqualFold(p.host, host) {
		return false
	}
	if !strings.HasPrefix(path, "/") {
		return false
	}
	rest, done := path[1:], false
	for _, sg := range p.segs {
		if sg.multi {
			return true
		}
		if done {
			return false
		}
		var seg string
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			seg, rest = rest[:i], rest[i+1:]
		} else {
			seg, done = rest, true
		}
		if sg.wild {
			if seg == "" {
				return false
			}
		} else if seg != sg.lit {
			return false
		}
	}
	return done
}
