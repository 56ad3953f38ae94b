package rules

import (
	"bytes"
	"strconv"

	"github.com/tollgate-dev/tollgate/internal/escape"
	"github.com/tollgate-dev/tollgate/limit"
)

// refusalReference is Refusal as it was before the fixed parts of the
// problem body were built at compile time (commit 6fb8615): the new one
// must write the very same bytes.
func (r *Result) refusalReference() Response {
	e := r.e
	if e == nil {
		return Response{Status: 429, ContentType: ContentTypeProblem}
	}
	status := e.status
	if r.Outcome == Errored {
		status = e.errorStatus
	}
	ra := int64(0)
	if r.Outcome == Refused {
		ra = retryAfterSeconds(r.Decision)
	}
	var violated [1]string
	vp := r.AppendViolatedPolicies(violated[:0])
	if e.bodyTmpl != nil {
		var buf bytes.Buffer
		err := e.bodyTmpl.Execute(&buf, RefusalData{
			Status: status, RetryAfter: ra, ViolatedPolicies: vp, Path: r.path,
			Limit: r.Decision.Limit, Remaining: r.Decision.Remaining,
		})
		if err == nil {
			return Response{Status: status, ContentType: e.contentType, Body: buf.Bytes()}
		}
		// A template that fails at run time falls back to problem+json
		// rather than sending half a body.
	}
	title := e.title
	if title == "" {
		title = statusText(status)
	}
	detail := e.detail
	b := make([]byte, 0, 256+len(r.path))
	b = append(b, `{"type":`...)
	b = escape.AppendJSONString(b, e.problemType)
	b = append(b, `,"title":`...)
	b = escape.AppendJSONString(b, title)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"detail":`...)
	if detail != "" {
		b = escape.AppendJSONString(b, detail)
	} else if r.Outcome == Errored {
		b = append(b, `"The rate limiter is unavailable."`...)
	} else if r.Decision.RetryAfter == limit.Never {
		b = append(b, `"The request costs more than the policy ever admits at once."`...)
	} else {
		b = append(b, `"Rate limit exceeded; retry in `...)
		b = strconv.AppendInt(b, ra, 10)
		if ra == 1 {
			b = append(b, ` second."`...)
		} else {
			b = append(b, ` seconds."`...)
		}
	}
	if r.path != "" {
		b = append(b, `,"instance":`...)
		b = escape.AppendJSONString(b, string(escape.AppendPath(make([]byte, 0, len(r.path)), r.path)))
	}
	if r.Outcome == Refused {
		b = append(b, `,"retry-after":`...)
		b = strconv.AppendInt(b, ra, 10)
		b = append(b, `,"violated-policies":[`...)
		for i, p := range vp {
			if i > 0 {
				b = append(b, ',')
			}
			b = escape.AppendJSONString(b, p)
		}
		b = append(b, ']')
	}
	b = append(b, "}\n"...)
	return Response{Status: status, ContentType: ContentTypeProblem, Body: b}
}
