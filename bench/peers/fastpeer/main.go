// fastpeer is the fasthttp baseline: a bare HostClient proxy with upstream
// keep-alive, or (-deny) a handler answering 429 with the same header
// fields and problem body tollgate writes.
package main

import (
	"flag"
	"log"

	"github.com/valyala/fasthttp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18097", "listen address")
	deny := flag.Bool("deny", false, "answer 429 to everything")
	flag.Parse()
	c := &fasthttp.HostClient{Addr: "127.0.0.1:18081", MaxConns: 512}
	body := []byte(`{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"retry in 3600 seconds","violated-policies":["per-ip"]}`)
	h := func(ctx *fasthttp.RequestCtx) {
		if err := c.Do(&ctx.Request, &ctx.Response); err != nil {
			ctx.Error("bad gateway", 502)
		}
	}
	if *deny {
		h = func(ctx *fasthttp.RequestCtx) {
			ctx.SetStatusCode(429)
			hd := &ctx.Response.Header
			hd.Set("Ratelimit-Policy", `"per-ip";q=1;w=3600`)
			hd.Set("Ratelimit", `"per-ip";r=0;t=3600`)
			hd.Set("Retry-After", "3600")
			hd.Set("Cache-Control", "no-store")
			hd.Set("X-Content-Type-Options", "nosniff")
			hd.SetContentType("application/problem+json")
			ctx.SetBody(body)
		}
	}
	log.Fatal(fasthttp.ListenAndServe(*addr, h))
}
