package gateway

import "bytes"

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

// validFieldNames reports whether every field name in raw, a request's
// header block as received (fasthttp's RequestHeader.RawHeaders, without
// the request line), is a token. fasthttp refuses most bad names itself
// but passes one with a space inside ("Transfer Encoding"), which an
// upstream may read differently: RFC 9112 §5 has the server refuse it.
// Continuation lines (obs-fold) have no name and are skipped.
func validFieldNames(raw []byte) bool {
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
