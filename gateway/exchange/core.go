package exchange

import (
	"log/slog"
	"sync/atomic"

	"github.com/tollgate-dev/tollgate/gateway/conns"
	"github.com/tollgate-dev/tollgate/gateway/observe"
)

// Core is what both data paths and the lifecycle share of one running
// gateway: the snapshot being served, the metrics and logs, the count of
// requests in flight, and the connections the data paths track. The
// gateway creates one and hands it to each data path.
type Core struct {
	Log  *slog.Logger
	M    *observe.Metrics
	Snap atomic.Pointer[Snapshot]

	Access   *observe.AccessLog // nil without access_log
	Warns    *observe.WarnLog   // fasthttp's and the proxy's, once started
	InFlight atomic.Int64       // requests being served
	Conns    conns.UpstreamConns
	Tunnels  conns.Tunnels
}
