package fastlimit

import (
	"context"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/rules"
)

// Charge charges res's counting rules (rules.Rule.Count) with the answer
// ctx holds: ctx.Response's status and header fields, as the handler (or
// the gateway's upstream exchange, or its own 502/504) left them. It
// does nothing when no rule that matched counts (res.Counts() is false),
// and allocates nothing then. Call it once per admitted request, once
// the answer is in ctx.Response and before the handler returns: fasthttp
// writes the response only then, so the client cannot read its answer
// before it is charged. A store error is the engine's to log; Charge
// returns it for a front end that counts them.
//
// The store gets context.Background, as in Decide.
func Charge(ctx *fasthttp.RequestCtx, res *rules.Result) error {
	if !res.Counts() {
		return nil
	}
	return res.Charge(context.Background(), ctx.Response.StatusCode(), (*answerHeader)(&ctx.Response.Header))
}

// chargeStatus charges res's counting rules with status and no header
// fields, for an answer ctx.Response does not hold (a handler that
// panicked, or ended its goroutine: status 0).
func chargeStatus(res *rules.Result, status int) error {
	if !res.Counts() {
		return nil
	}
	return res.Charge(context.Background(), status, nil)
}

// answerHeader is a fasthttp.ResponseHeader as rules.AnswerHeader.
type answerHeader fasthttp.ResponseHeader

// Header is the field's first value, copied (fasthttp reuses its
// buffers); name is canonical.
func (h *answerHeader) Header(name string) (string, bool) {
	vs := (*fasthttp.ResponseHeader)(h).PeekAll(name)
	if len(vs) == 0 {
		return "", false
	}
	return string(vs[0]), true
}
