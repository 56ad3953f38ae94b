package exchange

import "github.com/valyala/fasthttp"

// DemoBody is what the built-in demo origin answers.
const DemoBody = "Hello from tollgate's built-in demo origin.\n" +
	"This response passed the rate limiter: see the RateLimit headers.\n"

// Demo is the built-in origin used by the embedded default configuration
// (upstream: demo). It answers every request with 200 and a short text.
func Demo(ctx *fasthttp.RequestCtx) {
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("text/plain; charset=utf-8")
	if !ctx.IsHead() {
		ctx.SetBodyString(DemoBody)
	}
}
