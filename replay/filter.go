package replay

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/tollgate-dev/tollgate/accesslog"
)

// Filter selects the requests to simulate. The zero Filter selects all.
// Within a field the values are alternatives; across fields all must
// match.
type Filter struct {
	// PathPrefixes: the request path starts with one of these.
	PathPrefixes []string
	// Methods: the method is one of these, case-insensitively.
	Methods []string
	// Statuses: the status matches one of these patterns, where 'x'
	// matches any digit: "429", "5xx", "2xx".
	Statuses []string
}

// Validate reports a malformed status pattern.
func (f Filter) Validate() error {
	for _, s := range f.Statuses {
		if len(s) != 3 {
			return fmt.Errorf("status filter %q: want three digits or x, such as 404 or 5xx", s)
		}
		for _, c := range []byte(s) {
			if (c < '0' || c > '9') && c != 'x' && c != 'X' {
				return fmt.Errorf("status filter %q: want three digits or x, such as 404 or 5xx", s)
			}
		}
	}
	return nil
}

// match reports whether r passes the filter.
func (f *Filter) match(r *accesslog.Record) bool {
	if len(f.PathPrefixes) > 0 {
		ok := false
		for _, p := range f.PathPrefixes {
			if bytes.HasPrefix(r.Path, []byte(p)) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if len(f.Methods) > 0 {
		ok := false
		for _, m := range f.Methods {
			if len(m) == len(r.Method) && strings.EqualFold(m, string(r.Method)) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if len(f.Statuses) > 0 {
		ok := false
		for _, s := range f.Statuses {
			if statusMatch(s, r.Status) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func statusMatch(pat string, st []byte) bool {
	if len(st) != len(pat) {
		return false
	}
	for i := 0; i < len(pat); i++ {
		if c := pat[i]; c != 'x' && c != 'X' && c != st[i] {
			return false
		}
	}
	return true
}
