package h2path

import (
	"net/http"
	"sync"

	"github.com/tollgate-dev/tollgate/gateway/exchange"
)

// Server is the net/http data path of one gateway (HTTP/1.1, h2 and
// h2c, gRPC): its handler reads the running snapshot and writes the
// metrics and logs of the shared Core; it keeps the upstream transports
// across reloads.
type Server struct {
	*exchange.Core

	mu         sync.Mutex // guards transports
	transports map[string]http.RoundTripper
}

// New returns the data path over core.
func New(core *exchange.Core) *Server { return &Server{Core: core} }
