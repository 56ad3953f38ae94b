package gateway

import (
	"os"
	"strconv"

	"github.com/tollgate-dev/tollgate/adaptive"
	"github.com/tollgate-dev/tollgate/gateway/adapt"
)

// initAdaptive sets up the controllers over the store's fleets.
func (g *Gateway) initAdaptive() {
	fleets := map[string]adaptive.Fleet{}
	if rs := g.stores.Redis(); rs != nil {
		fleets[adaptive.FleetRedis] = rs.Fleet(nodeName())
	}
	if gs := g.stores.Gossip(); gs != nil {
		fleets[adaptive.FleetGossip] = adaptive.NewBoardFleet(gs)
	}
	g.adapt = adapt.NewControllers(g.core.M.Reg, g.core.Log, fleets)
}

// nodeName names this gateway in the fleet's shared factors: host name
// and process id.
func nodeName() string {
	h, _ := os.Hostname()
	return h + ":" + strconv.Itoa(os.Getpid())
}
