package accesslog

import (
	"strconv"
	"time"
)

// TimeLayout is the layout of the combined format's time, between '['
// and ']'.
const TimeLayout = "02/Jan/2006:15:04:05 -0700"

// Entry is one request as the gateway logs it. Its byte slices are only
// read; empty ones are written as "-".
type Entry struct {
	// Time is when the response was written.
	Time time.Time
	// Remote is the client's address, without its port.
	Remote []byte
	// Method, URI and Proto are the request line's parts, and Host the
	// request's host (JSON only).
	Method, URI, Proto, Host []byte
	// Referer and UserAgent are the request's headers of those names.
	Referer, UserAgent []byte
	// Status is the response's status code and Bytes its body's size.
	Status, Bytes int
	// Duration is how long the request took (JSON only).
	Duration time.Duration
	// Rule is the decisive rule and Decision the outcome ("" when no
	// rule matched). Rule names need no escaping: the configuration
	// allows only letters, digits, '-', '_' and '.'.
	Rule, Decision string
}

// AppendCombined appends e to b as one line of the combined format with
// rule= and decision= appended, newline included. It does not allocate
// beyond growing b.
func AppendCombined(b []byte, e *Entry) []byte {
	b = appendOrDash(b, e.Remote)
	b = append(b, " - - ["...)
	b = e.Time.AppendFormat(b, TimeLayout)
	b = append(b, "] \""...)
	b = AppendQuoted(b, e.Method)
	b = append(b, ' ')
	b = appendField(b, e.URI)
	b = append(b, ' ')
	b = AppendQuoted(b, e.Proto)
	b = append(b, "\" "...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(e.Bytes), 10)
	b = append(b, " \""...)
	b = appendField(b, e.Referer)
	b = append(b, "\" \""...)
	b = appendField(b, e.UserAgent)
	b = append(b, "\" rule="...)
	b = appendOrDash(b, e.Rule)
	b = append(b, " decision="...)
	b = appendOrDash(b, e.Decision)
	return append(b, '\n')
}

// appendOrDash appends v as it is, or "-" when it is empty.
func appendOrDash[T string | []byte](b []byte, v T) []byte {
	if len(v) == 0 {
		return append(b, '-')
	}
	return append(b, v...)
}

// appendField appends a quoted field's value escaped, or "-" when empty.
func appendField(b, v []byte) []byte {
	if len(v) == 0 {
		return append(b, '-')
	}
	return AppendQuoted(b, v)
}

// AppendQuoted appends v with '"', '\\', control bytes and bytes from
// 0x7f escaped as \xHH, as nginx does in its combined log, so that no
// value can end a quoted field or the line. Unquote reverses it.
func AppendQuoted[T string | []byte](b []byte, v T) []byte {
	const hex = "0123456789ABCDEF"
	for i := range len(v) {
		c := v[i]
		switch {
		case c == '"' || c == '\\' || c < 0x20 || c >= 0x7f:
			b = append(b, '\\', 'x', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
	}
	return b
}

// Unquote appends src, a quoted field's value as written, to dst with the
// escapes decoded: \xHH (nginx, Apache and AppendQuoted), \" and \\
// (Apache). Any other backslash is kept as written.
func Unquote(dst, src []byte) []byte {
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c != '\\' || i+1 == len(src) {
			dst = append(dst, c)
			continue
		}
		switch n := src[i+1]; {
		case n == '"' || n == '\\':
			dst = append(dst, n)
			i++
		case n == 'x' && i+3 < len(src) && isHex(src[i+2]) && isHex(src[i+3]):
			dst = append(dst, unhex(src[i+2])<<4|unhex(src[i+3]))
			i += 3
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'f' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c | 0x20 - 'a' + 10
}
