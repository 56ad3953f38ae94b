package fastpath

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

// tchar marks the bytes of a token (RFC 9110 §5.6.2), which a field name
// is made of.
var tchar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range []byte("!#$%&'*+-.^_`|~") {
		t[c] = true
	}
	return t
}()

// ValidFieldNames reports whether every field name in raw, a request's
// header block as received (fasthttp's RequestHeader.RawHeaders, without
// the request line), is a token. fasthttp refuses most bad names itself
// but passes one with a space inside ("Transfer Encoding"), which an
// upstream may read differently: RFC 9112 §5 has the server refuse it.
// Continuation lines (obs-fold) have no name and are skipped.
func ValidFieldNames(raw []byte) bool {
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if len(line) == 0 || line[0] == ' ' || line[0] == '\t' {
			continue
		}
		i := 0
		for i < len(line) && tchar[line[i]] {
			i++
		}
		if i == 0 || i == len(line) || line[i] != ':' {
			return false
		}
	}
	return true
}

// isToken reports whether name is a non-empty token.
func isToken(name []byte) bool {
	for _, c := range name {
		if !tchar[c] {
			return false
		}
	}
	return len(name) > 0
}

// removeInvalidResponseFields deletes the upstream's fields whose name is
// not a token. fasthttp reads a name with a space inside ("Bad Name")
// and would pass it to the client; it marks such a response
// Connection: close, so only those are scanned.
func removeInvalidResponseFields(h *fasthttp.ResponseHeader) {
	if !h.ConnectionClose() {
		return
	}
	var bad [][]byte
	for k := range h.All() {
		if !isToken(k) {
			bad = append(bad, append([]byte(nil), k...))
		}
	}
	for _, k := range bad {
		h.DelBytes(k)
	}
}
