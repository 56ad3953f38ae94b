package gateway

import (
	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/store/memory"
	"github.com/tollgate-dev/tollgate/store/redis"
)

// openSlots makes the store of concurrency slots: on Redis when the
// store is, with the configured lease, else in memory.
func (g *Gateway) openSlots(cfg *config.Config) {
	if rs := g.stores.Redis(); rs != nil {
		g.slots = rs.Slots(cfg.ConcurrencyLease)
		return
	}
	g.slots = memory.NewSlots()
}

// closeSlots stops the Redis slots' renewer.
func (g *Gateway) closeSlots() {
	if rs, ok := g.slots.(*redis.Slots); ok {
		rs.Close()
	}
}
