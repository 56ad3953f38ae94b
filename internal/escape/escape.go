// Package escape writes text into the two places where tollgate echoes
// what a client sent: JSON strings (the refusal's problem details, the
// JSON access log) and URI paths (a refusal's instance, the upstream
// request's path). One implementation of each, so that every place
// escapes alike. Both append to a buffer and do not allocate.
package escape

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendJSONString appends v as a JSON string, as encoding/json writes
// one: '"' and '\\' escaped; control bytes as \n, \r, \t or \u00XX; '<',
// '>', '&' and DEL as \u00XX (safe inside HTML); U+2028 and U+2029
// escaped (safe inside JavaScript); each byte of invalid UTF-8 replaced
// by \ufffd; other valid UTF-8 kept as it is. The result is always valid
// JSON, unlike strconv.AppendQuote's (\xHH, \a and \U are not JSON).
func AppendJSONString[T string | []byte](b []byte, v T) []byte {
	b = append(b, '"')
	start := 0 // v[start:i] is still to be copied as it is
	for i := 0; i < len(v); {
		c := v[i]
		if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' && c < 0x7f {
			i++
			continue
		}
		size := 1
		if c >= utf8.RuneSelf {
			// A conversion of at most 4 bytes that does not escape
			// is made on the stack.
			var r rune
			r, size = utf8.DecodeRuneInString(string(v[i:min(i+utf8.UTFMax, len(v))]))
			if r != utf8.RuneError && r != '\u2028' && r != '\u2029' || size != 1 && r == utf8.RuneError {
				i += size
				continue
			}
			b = append(b, v[start:i]...)
			if r == utf8.RuneError {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			}
			i += size
			start = i
			continue
		}
		b = append(b, v[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		}
		i++
		start = i
	}
	b = append(b, v[start:]...)
	return append(b, '"')
}

// AppendPath appends the decoded path p percent-encoded as a URI path
// (RFC 3986): all but the unreserved characters, the sub-delims, ':',
// '@' and '/'.
func AppendPath[T string | []byte](b []byte, p T) []byte {
	const upper = "0123456789ABCDEF"
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			b = append(b, c)
		case c == '-' || c == '.' || c == '_' || c == '~' || c == '!' || c == '$' || c == '&' || c == '\'' ||
			c == '(' || c == ')' || c == '*' || c == '+' || c == ',' || c == ';' || c == '=' || c == ':' || c == '@' || c == '/':
			b = append(b, c)
		default:
			b = append(b, '%', upper[c>>4], upper[c&15])
		}
	}
	return b
}

// Unhex is the value of the hex digit c (either case), or -1: the
// decoding of a path's percent escapes, shared by the gateway's proxy
// path and forward-auth's reading of a forwarded target.
func Unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}
