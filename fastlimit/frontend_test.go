package fastlimit_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/tollgate-dev/tollgate/fastlimit"
	"github.com/tollgate-dev/tollgate/internal/frontendtest"
	"github.com/tollgate-dev/tollgate/rules"
)

// fastlimit.Middleware answers the front ends' one table of cases
// (frontendtest) as the net/http ones do: a delayed request whose client
// went away is not served, though fasthttp waits its whole delay (it
// cannot be told of the departure before).
func TestFrontEndTable(t *testing.T) {
	frontendtest.Run(t, frontendtest.FrontEnd{Name: "fastlimit", Start: func(t *testing.T, cfg rules.Config) *frontendtest.Running {
		e := newEngine(t, cfg)
		origin, served := frontendtest.Origin()
		mw := fastlimit.Middleware(func() *rules.Engine { return e }, fasthttpadaptor.NewFastHTTPHandler(origin))
		var received, ended atomic.Int64
		url := serve(t, func(ctx *fasthttp.RequestCtx) {
			received.Add(1)
			defer ended.Add(1)
			mw(ctx)
		})
		return &frontendtest.Running{URL: url, Client: &http.Client{}, Served: served,
			Received: func() int { return int(received.Load()) },
			Ended:    func(t *testing.T, n int) { frontendtest.Until(t, func() bool { return ended.Load() >= int64(n) }) }}
	}})
}
