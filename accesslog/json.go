package accesslog

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// The names of the JSON format's fields that tollgate replay reads (its
// DefaultFields list them first).
const (
	FieldTime   = "time"
	FieldRemote = "remote_addr"
	FieldMethod = "method"
	FieldHost   = "host"
	FieldURI    = "uri"
	FieldStatus = "status"
)

// AppendJSON appends e to b as one JSON line, newline included: the
// fields time (RFC 3339, UTC), remote_addr, method, host, uri, status,
// bytes, duration_ms, user_agent, rule and decision ("" when no rule
// matched), names tollgate replay finds without a flag. It does not
// allocate beyond growing b.
func AppendJSON(b []byte, e *Entry) []byte {
	b = append(b, `{"`+FieldTime+`":"`...)
	b = e.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","`+FieldRemote+`":`...)
	b = appendJSONString(b, e.Remote)
	b = append(b, `,"`+FieldMethod+`":`...)
	b = appendJSONString(b, e.Method)
	b = append(b, `,"`+FieldHost+`":`...)
	b = appendJSONString(b, e.Host)
	b = append(b, `,"`+FieldURI+`":`...)
	b = appendJSONString(b, e.URI)
	b = append(b, `,"`+FieldStatus+`":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, int64(e.Bytes), 10)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendFloat(b, float64(e.Duration.Microseconds())/1000, 'f', 3, 64)
	b = append(b, `,"user_agent":`...)
	b = appendJSONString(b, e.UserAgent)
	b = append(b, `,"rule":`...)
	b = appendJSONString(b, e.Rule)
	b = append(b, `,"decision":`...)
	b = appendJSONString(b, e.Decision)
	return append(b, "}\n"...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends v as a JSON string: '"' and '\\' escaped, control
// bytes as \n, \r, \t or \u00XX, each byte of invalid UTF-8 replaced by
// \ufffd, and valid UTF-8 kept as it is. Unlike strconv.AppendQuote, whose
// \xHH, \a and \U escapes JSON does not allow, the result is always valid
// JSON. It does not allocate.
func appendJSONString[T string | []byte](b []byte, v T) []byte {
	b = append(b, '"')
	start := 0 // v[start:i] is still to be copied as it is
	for i := 0; i < len(v); {
		c := v[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			// A conversion of at most 4 bytes that does not escape
			// is made on the stack.
			r, size := utf8.DecodeRuneInString(string(v[i:min(i+utf8.UTFMax, len(v))]))
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
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
		default:
			if c < 0x20 {
				b = append(b, `\u00`...)
				b = append(b, hexDigits[c>>4], hexDigits[c&15])
			} else {
				b = append(b, `\ufffd`...)
			}
		}
		i++
		start = i
	}
	b = append(b, v[start:]...)
	return append(b, '"')
}
