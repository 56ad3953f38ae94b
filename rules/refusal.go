package rules

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/limit"
)

// Response is a refusal to write: status, content type and body. The
// header fields (Retry-After, Cache-Control: no-store, rate-limit fields)
// come from Result.AppendHeaders.
type Response struct {
	Status      int
	ContentType string
	// Body is the problem+json document or the custom body. Send it only
	// when the request method is not HEAD.
	Body []byte
}

// ContentTypeProblem is the media type of the default refusal body.
const ContentTypeProblem = "application/problem+json"

func (e *Engine) compileHeaders(h Headers, ps *problems) {
	styles := h.Styles
	if styles == nil {
		styles = []string{StyleDraft10}
	}
	for i, s := range styles {
		switch strings.ToLower(s) {
		case StyleDraft10:
			e.styleDraft10 = true
		case StyleDraft6:
			e.styleDraft6 = true
		case StyleLegacy:
			e.styleLegacy = true
		case "none":
		default:
			ps.add(fmt.Sprintf("headers.styles[%d]", i), "unknown style %q (want draft10, draft6, legacy or none)", s)
		}
	}
	switch h.Reset {
	case "", "epoch":
		e.resetEpoch = true
	case "delta":
	default:
		ps.add("headers.reset", "%q: want epoch or delta", h.Reset)
	}
}

func (e *Engine) compileRefusal(r Refusal, ps *problems) {
	e.status, e.errorStatus = 429, 503
	if r.Status != 0 {
		if r.Status < 400 || r.Status > 599 {
			ps.add("refusal.status", "%d: want 400 to 599", r.Status)
		}
		e.status = r.Status
	}
	if r.ErrorStatus != 0 {
		if r.ErrorStatus < 400 || r.ErrorStatus > 599 {
			ps.add("refusal.error_status", "%d: want 400 to 599", r.ErrorStatus)
		}
		e.errorStatus = r.ErrorStatus
	}
	e.problemType = r.Type
	if e.problemType == "" {
		e.problemType = ProblemQuotaExceeded
	}
	e.title = r.Title
	e.detail = r.Detail
	for _, f := range []struct{ name, v string }{{"type", r.Type}, {"title", r.Title}, {"detail", r.Detail}} {
		if !utf8.ValidString(f.v) {
			ps.add("refusal."+f.name, "not valid UTF-8")
		}
	}
	if r.Body != "" {
		t, err := template.New("refusal").Option("missingkey=error").Parse(r.Body)
		if err != nil {
			ps.add("refusal.body", "%v", err)
		}
		e.bodyTmpl = t
		e.contentType = r.ContentType
		if e.contentType == "" {
			e.contentType = "text/plain; charset=utf-8"
		}
	} else if r.ContentType != "" {
		ps.add("refusal.content_type", "set without a body")
	}
	if strings.ContainsAny(r.ContentType, "\r\n") {
		ps.add("refusal.content_type", "contains a line break")
	}
}

// Refusal returns what to answer when Refused reports true: the configured
// status (429 by default; Config.Refusal.ErrorStatus for a store failure)
// and an RFC 9457 problem+json body with type, title, status, detail,
// instance (the request path), retry-after (seconds) and
// violated-policies, or the custom body.
func (r *Result) Refusal() Response {
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
	b = appendJSONString(b, e.problemType)
	b = append(b, `,"title":`...)
	b = appendJSONString(b, title)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"detail":`...)
	if detail != "" {
		b = appendJSONString(b, detail)
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
		b = appendJSONString(b, string(appendEscapedPath(make([]byte, 0, len(r.path)), r.path)))
	}
	if r.Outcome == Refused {
		b = append(b, `,"retry-after":`...)
		b = strconv.AppendInt(b, ra, 10)
		b = append(b, `,"violated-policies":[`...)
		for i, p := range vp {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, p)
		}
		b = append(b, ']')
	}
	b = append(b, "}\n"...)
	return Response{Status: status, ContentType: ContentTypeProblem, Body: b}
}

// appendEscapedPath appends p percent-encoded as a URI path (RFC 3986
// pchar and '/'), so the instance member is a URI reference.
func appendEscapedPath(b []byte, p string) []byte {
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0 {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hexDigits[c>>4], hexDigits[c&0xf])
	}
	return b
}

// appendJSONString appends s as a JSON string; invalid UTF-8 becomes
// U+FFFD, and <, >, & are escaped as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// statusText is the reason phrase of the statuses a refusal uses, without
// importing net/http.
func statusText(code int) string {
	switch code {
	case 429:
		return "Too Many Requests"
	case 503:
		return "Service Unavailable"
	case 403:
		return "Forbidden"
	case 400:
		return "Bad Request"
	case 500:
		return "Internal Server Error"
	case 502:
		return "Bad Gateway"
	case 504:
		return "Gateway Timeout"
	}
	return "Error " + strconv.Itoa(code)
}
