package rules

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/internal/escape"
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

// DetailDelayEnded is the detail of the 503 problem every front end
// answers a delayed request with when it ends before its delay does (its
// client went away, its deadline passed): the request is not served.
const DetailDelayEnded = "the request's context ended while it waited for the rate limit"

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
	e.compileProblem()
}

// Refusal returns what to answer when Refused reports true: the configured
// status (429 by default; Config.Refusal.ErrorStatus for a store failure)
// and an RFC 9457 problem+json body with type, title, status, detail,
// instance (the request path), retry-after (seconds) and
// violated-policies, or the custom body. The body is newly allocated; see
// AppendRefusal to write it into a reused buffer.
func (r *Result) Refusal() Response {
	return r.AppendRefusal(make([]byte, 0, 256+3*len(r.path)))
}

// AppendRefusal is Refusal with the body appended to dst, which may be a
// reused buffer: the returned Body is the grown dst. The parts of the
// problem+json body fixed by the configuration (type, title, status, the
// violated policy's name) are built once by New, so with room in dst the
// default body costs no allocation; a custom body template allocates.
func (r *Result) AppendRefusal(dst []byte) Response {
	e := r.e
	if e == nil {
		return Response{Status: 429, ContentType: ContentTypeProblem, Body: dst}
	}
	if e.bodyTmpl != nil {
		if ref, ok := r.templateRefusal(dst); ok {
			return ref
		}
		// A template that fails at run time falls back to problem+json
		// rather than sending half a body.
	}
	status, b := e.status, dst
	if r.Outcome == Errored {
		status = e.errorStatus
		b = append(b, e.problemErrored...)
	} else {
		b = append(b, e.problemRefused...)
	}
	ra := int64(0)
	if r.Outcome == Refused {
		ra = retryAfterSeconds(r.Decision)
	}
	switch {
	case e.problemDetail != "":
		b = append(b, e.problemDetail...)
	case r.Outcome == Errored:
		b = append(b, `"The rate limiter is unavailable."`...)
	case r.Decision.RetryAfter == limit.Never:
		b = append(b, `"The request costs more than the policy ever admits at once."`...)
	default:
		b = append(b, `"Rate limit exceeded; retry in `...)
		b = strconv.AppendInt(b, ra, 10)
		if ra == 1 {
			b = append(b, ` second."`...)
		} else {
			b = append(b, ` seconds."`...)
		}
	}
	if r.path != "" {
		b = append(b, `,"instance":"`...)
		b = appendInstance(b, r.path)
		b = append(b, '"')
	}
	if r.Outcome == Refused {
		b = append(b, `,"retry-after":`...)
		b = strconv.AppendInt(b, ra, 10)
		if r.enforced > 0 {
			b = append(b, r.at(r.Decision.Index).policy.problemViolated...)
		} else {
			b = append(b, `,"violated-policies":[]`...)
		}
	}
	b = append(b, "}\n"...)
	return Response{Status: status, ContentType: ContentTypeProblem, Body: b}
}

// templateRefusal runs the custom body template into dst; ok is false when
// it failed.
func (r *Result) templateRefusal(dst []byte) (Response, bool) {
	e := r.e
	status := e.status
	if r.Outcome == Errored {
		status = e.errorStatus
	}
	ra := int64(0)
	if r.Outcome == Refused {
		ra = retryAfterSeconds(r.Decision)
	}
	var violated [1]string
	var buf bytes.Buffer
	err := e.bodyTmpl.Execute(&buf, RefusalData{
		Status: status, RetryAfter: ra, ViolatedPolicies: r.AppendViolatedPolicies(violated[:0]), Path: r.path,
		Limit: r.Decision.Limit, Remaining: r.Decision.Remaining,
	})
	if err != nil {
		return Response{}, false
	}
	// Copied, so that dst does not escape.
	return Response{Status: status, ContentType: e.contentType, Body: append(dst, buf.Bytes()...)}, true
}

// compileProblem builds the fixed parts of the problem+json body, once:
// its opening up to the detail member for each status, and the detail
// when the configuration fixes it.
func (e *Engine) compileProblem() {
	head := func(status int) string {
		title := e.title
		if title == "" {
			title = statusText(status)
		}
		return string(appendProblemHead(nil, e.problemType, title, status))
	}
	e.problemRefused, e.problemErrored = head(e.status), head(e.errorStatus)
	if e.detail != "" {
		e.problemDetail = string(escape.AppendJSONString(nil, e.detail))
	}
}

// appendProblemHead appends a problem+json body's opening, up to its
// detail member's value.
func appendProblemHead(b []byte, typ, title string, status int) []byte {
	b = append(b, `{"type":`...)
	b = escape.AppendJSONString(b, typ)
	b = append(b, `,"title":`...)
	b = escape.AppendJSONString(b, title)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	return append(b, `,"detail":`...)
}

// AppendProblem appends an RFC 9457 problem+json body of type
// about:blank to b: {"type":"about:blank","title":…,"status":…,
// "detail":…}, title and detail escaped. Front ends answer what the
// engine did not decide (no route, a malformed request, an upstream that
// failed) with it, written as the engine writes its refusals.
func AppendProblem(b []byte, status int, title, detail string) []byte {
	b = appendProblemHead(b, "about:blank", title, status)
	b = escape.AppendJSONString(b, detail)
	return append(b, '}')
}

// problemViolated is a policy's violated-policies member, built once.
func problemViolated(name string) string {
	b := []byte(`,"violated-policies":[`)
	b = escape.AppendJSONString(b, name)
	return string(append(b, ']'))
}

// instanceByte says how appendInstance writes each byte of a path: 0
// percent-encoded, 1 as is, 2 as the JSON escape of '&'.
var instanceByte = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~!$'()*+,;=:@/", byte(c)) >= 0 {
			t[c] = 1
		}
	}
	t['&'] = 2
	return t
}()

// appendInstance appends path percent-encoded as a URI path and escaped
// as the inside of a JSON string, in one pass: what
// escape.AppendJSONString(escape.AppendPath(path)) writes between its quotes.
func appendInstance(b []byte, p string) []byte {
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch instanceByte[c] {
		case 1:
			b = append(b, c)
		case 2:
			b = append(b, `\u0026`...)
		default:
			b = append(b, '%', hexDigits[c>>4], hexDigits[c&0xf])
		}
	}
	return b
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
