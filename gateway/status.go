package gateway

import "github.com/tollgate-dev/tollgate/gateway/dashboard"

// StatusProvider is a part of the gateway that the dashboard shows the
// state of (adaptive controllers, a gossip mesh): see AddStatus.
type StatusProvider = dashboard.StatusProvider

// AddStatus adds p to the parts the dashboard shows, after the store's.
// It is safe to call at any time; p.Status is called once per frame while
// a dashboard is open.
func (g *Gateway) AddStatus(p StatusProvider) {
	g.dash.Mu.Lock()
	g.dash.Providers = append(g.dash.Providers, p)
	g.dash.Mu.Unlock()
}
