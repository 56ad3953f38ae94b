package dashfeed

import (
	"github.com/tollgate-dev/tollgate/gateway/adapt"
	"github.com/tollgate-dev/tollgate/gateway/exchange"
	stores "github.com/tollgate-dev/tollgate/storeopen"
)

// Sources are what the dashboard reads of the running gateway: the
// snapshot and log (Core), the stores' state and the adaptive
// controllers' and concurrency limits' status.
type Sources struct {
	*exchange.Core
	Stores *stores.Set
	Adapt  *adapt.Controllers
	Concs  *adapt.ConcLimits
}
