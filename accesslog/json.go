package accesslog

import (
	"strconv"
	"time"

	"github.com/tollgate-dev/tollgate/internal/escape"
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
	b = escape.AppendJSONString(b, e.Remote)
	b = append(b, `,"`+FieldMethod+`":`...)
	b = escape.AppendJSONString(b, e.Method)
	b = append(b, `,"`+FieldHost+`":`...)
	b = escape.AppendJSONString(b, e.Host)
	b = append(b, `,"`+FieldURI+`":`...)
	b = escape.AppendJSONString(b, e.URI)
	b = append(b, `,"`+FieldStatus+`":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, int64(e.Bytes), 10)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendFloat(b, float64(e.Duration.Microseconds())/1000, 'f', 3, 64)
	b = append(b, `,"user_agent":`...)
	b = escape.AppendJSONString(b, e.UserAgent)
	b = append(b, `,"rule":`...)
	b = escape.AppendJSONString(b, e.Rule)
	b = append(b, `,"decision":`...)
	b = escape.AppendJSONString(b, e.Decision)
	return append(b, "}\n"...)
}
