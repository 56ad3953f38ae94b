package fastlimit_test

import (
	"net"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/fastlimit"
	"github.com/tollgate-dev/tollgate/internal/racebuild"
	"github.com/tollgate-dev/tollgate/rules"
)

// counting is one rule charging only the answers count names, 2 an
// hour per client IP.
func counting(t testing.TB, count rules.Count) *rules.Engine {
	return newEngine(t, rules.Config{Rules: []rules.Rule{{
		Name: "failed", Count: &count,
		Policies: []rules.Policy{{Algorithm: "fixed_window", Limit: 2, Window: "1h"}},
	}}})
}

// loginCtx is a request to /login from 192.0.2.1.
func loginCtx() *fasthttp.RequestCtx {
	var ctx fasthttp.RequestCtx
	var req fasthttp.Request
	req.SetRequestURI("http://example.com/login")
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4000}, nil)
	return &ctx
}

// The middleware charges the answer the handler leaves in ctx.Response:
// a counted status (or header field) uses the allowance up; any other
// answer never does.
func TestMiddlewareChargesTheAnswer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		count   rules.Count
		answer  fasthttp.RequestHandler
		counted bool
	}{
		{"401 counted", rules.Count{Statuses: []string{"401"}}, func(ctx *fasthttp.RequestCtx) { ctx.SetStatusCode(401) }, true},
		{"200 not counted", rules.Count{Statuses: []string{"401"}}, func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("ok") }, false},
		{"header counted", rules.Count{Header: rules.HeaderMatch{Name: "X-Login", Value: "failed"}},
			func(ctx *fasthttp.RequestCtx) { ctx.Response.Header.Set("X-Login", "failed") }, true},
		{"header absent", rules.Count{Header: rules.HeaderMatch{Name: "X-Login", Value: "failed"}},
			func(*fasthttp.RequestCtx) {}, false},
		{"panic counted as 500", rules.Count{Statuses: []string{"5xx"}}, func(*fasthttp.RequestCtx) { panic("boom") }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := counting(t, tc.count)
			h := fastlimit.Middleware(func() *rules.Engine { return e }, tc.answer)
			var codes []int
			for range 4 {
				ctx := loginCtx()
				func() {
					defer func() { recover() }() //nolint:errcheck // the handler's panic, which goes on
					h(ctx)
				}()
				codes = append(codes, ctx.Response.StatusCode())
			}
			refused := codes[2] == 429 && codes[3] == 429
			if tc.counted != refused || codes[0] == 429 || codes[1] == 429 {
				t.Fatalf("answers %v; counted %v: want the third and fourth refused exactly when counted", codes, tc.counted)
			}
		})
	}
}

// Charging allocates nothing when no rule counts, and the counting path
// allocates nothing for a status-only count either.
func TestChargeAllocatesNothing(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	plain := newEngine(t, rules.Config{Rules: []rules.Rule{{Name: "ip", Policies: []rules.Policy{{Rate: "1000000000/s"}}}}})
	cnt := newEngine(t, rules.Config{Rules: []rules.Rule{{Name: "failed", Count: &rules.Count{Statuses: []string{"401"}},
		Policies: []rules.Policy{{Rate: "1000000000/s"}}}}})
	for name, e := range map[string]*rules.Engine{"no count": plain, "count 401": cnt} {
		h := fastlimit.Middleware(func() *rules.Engine { return e }, func(ctx *fasthttp.RequestCtx) { ctx.SetStatusCode(401) })
		ctx := loginCtx()
		h(ctx)
		if n := testing.AllocsPerRun(1000, func() { h(ctx) }); n != 0 {
			t.Errorf("%s: %v allocations per request, want 0", name, n)
		}
	}
}
