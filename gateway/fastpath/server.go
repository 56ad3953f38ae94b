package fastpath

import "github.com/tollgate-dev/tollgate/gateway/exchange"

// Server is the fasthttp data path of one gateway: its handlers
// (Serve, ExpectContinue, ConnState, ReadError) read the running
// snapshot and write the metrics and logs of the shared Core.
type Server struct {
	*exchange.Core
}

// New returns the data path over core.
func New(core *exchange.Core) *Server { return &Server{Core: core} }
