package accesslog

import (
	"bytes"
	"fmt"
	"unsafe"
)

// Query is what a line keeps of a request-target's query string: every
// byte (keep, the zero Query, as nginx writes $request), nothing (drop),
// or each parameter with the value of the ones named replaced by
// Redacted (redact). Query strings carry tokens, API keys and signed
// URLs' signatures, which a log must not keep.
type Query struct {
	mode  queryMode
	names []string // redact: the parameter names, any case; none: every value
}

type queryMode uint8

const (
	queryKeep queryMode = iota
	queryDrop
	queryRedact
)

// Redacted replaces a redacted parameter's value.
const Redacted = "REDACTED"

// MaxRedactName bounds a parameter name to redact, in bytes.
const MaxRedactName = 64

// NewQuery returns the Query of mode "keep" (or ""), "drop" or "redact";
// names are the parameters whose values redact replaces, matched without
// regard to case once their escapes are decoded (none: every value).
// Names are only for redact.
func NewQuery(mode string, names []string) (Query, error) {
	var q Query
	switch mode {
	case "", "keep":
	case "drop":
		q.mode = queryDrop
	case "redact":
		q.mode = queryRedact
	default:
		return Query{}, fmt.Errorf("query %q: want keep, drop or redact", mode)
	}
	if len(names) > 0 && q.mode != queryRedact {
		return Query{}, fmt.Errorf("parameter names to redact are read only with query: redact")
	}
	for _, n := range names {
		if n == "" || len(n) > MaxRedactName {
			return Query{}, fmt.Errorf("parameter name %q to redact: want 1 to %d bytes", n, MaxRedactName)
		}
	}
	q.names = append([]string(nil), names...)
	return q, nil
}

// AppendURI appends the request-target uri to dst with its query as q
// says. It allocates nothing beyond dst's growth; with keep it is an
// append.
func (q *Query) AppendURI(dst, uri []byte) []byte {
	if q.mode == queryKeep {
		return append(dst, uri...)
	}
	i := bytes.IndexByte(uri, '?')
	if i < 0 {
		return append(dst, uri...)
	}
	if q.mode == queryDrop {
		return append(dst, uri[:i]...)
	}
	dst = append(dst, uri[:i+1]...)
	rest := uri[i+1:]
	for first := true; ; first = false {
		var pair []byte
		if j := bytes.IndexByte(rest, '&'); j >= 0 {
			pair, rest = rest[:j], rest[j+1:]
		} else {
			pair, rest = rest, nil
		}
		if !first {
			dst = append(dst, '&')
		}
		if k := bytes.IndexByte(pair, '='); k >= 0 && q.redacts(pair[:k]) {
			dst = append(dst, pair[:k+1]...)
			dst = append(dst, Redacted...)
		} else {
			dst = append(dst, pair...)
		}
		if rest == nil {
			return dst
		}
	}
}

// AppendURIString is AppendURI of a string (net/http's RequestURI),
// read in place.
func (q *Query) AppendURIString(dst []byte, uri string) []byte {
	return q.AppendURI(dst, unsafe.Slice(unsafe.StringData(uri), len(uri)))
}

// redacts reports whether the value of the parameter named by the raw
// (still encoded) key is replaced.
func (q *Query) redacts(key []byte) bool {
	if len(q.names) == 0 {
		return true
	}
	var buf [MaxRedactName]byte
	name, ok := decodeName(buf[:0], key)
	if !ok {
		return false // longer than every name
	}
	for _, n := range q.names {
		if equalFold(n, name) {
			return true
		}
	}
	return false
}

// decodeName appends the query-decoded key ("+" a space, "%HH" a byte)
// to dst, reporting false once it would pass dst's capacity (no name is
// that long). An invalid escape is kept as it is.
func decodeName(dst, key []byte) ([]byte, bool) {
	for i := 0; i < len(key); i++ {
		if len(dst) == cap(dst) {
			return dst, false
		}
		c := key[i]
		switch {
		case c == '+':
			c = ' '
		case c == '%' && i+2 < len(key) && isHex(key[i+1]) && isHex(key[i+2]):
			c = byte(unhex(key[i+1])<<4 | unhex(key[i+2]))
			i += 2
		}
		dst = append(dst, c)
	}
	return dst, true
}

// equalFold reports whether s and b are equal without regard to ASCII
// case.
func equalFold(s string, b []byte) bool {
	if len(s) != len(b) {
		return false
	}
	for i := range len(b) {
		x, y := s[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
