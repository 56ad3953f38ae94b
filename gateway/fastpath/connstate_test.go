package fastpath

import (
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/tollgate-dev/tollgate/gateway/conns"
	"github.com/tollgate-dev/tollgate/gateway/exchange"
)

// BenchmarkConnState is the in-flight count's cost per request: the
// Active and Idle reports of one exchange.
func BenchmarkConnState(b *testing.B) {
	g := New(&exchange.Core{})
	c := &conns.YieldConn{}
	b.ReportAllocs()
	for b.Loop() {
		g.ConnState(c, fasthttp.StateActive)
		g.ConnState(c, fasthttp.StateIdle)
	}
}
