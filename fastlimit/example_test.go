package fastlimit_test

import (
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/fastlimit"
	"github.com/tollgate-dev/tollgate/rules"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// A fasthttp server limited to 2 requests per hour per client IP.
func ExampleMiddleware() {
	st, _ := memory.New(memory.Config{})
	defer st.Close()
	engine, err := rules.New(rules.Config{Rules: []rules.Rule{{
		Name:     "per-ip",
		Policies: []rules.Policy{{Algorithm: "sliding_log", Limit: 2, Window: "1h"}},
	}}}, st)
	if err != nil {
		fmt.Println(err)
		return
	}
	hello := func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("hello") }
	srv := &fasthttp.Server{Handler: fastlimit.Middleware(func() *rules.Engine { return engine }, hello)}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	go srv.Serve(ln)
	defer srv.Shutdown()
	for range 3 {
		resp, err := http.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			fmt.Println(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("RateLimit"))
	}
	// Output:
	// 200 "per-ip";r=1;t=3600
	// 200 "per-ip";r=0;t=3600
	// 429 "per-ip";r=0;t=3600
}
