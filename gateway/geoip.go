package gateway

import (
	"time"

	"github.com/tollgate-dev/tollgate/gateway/observe"
)

// watchGeoIP polls the running configuration's geoip databases
// (geoip.DB.Poll) every geoip.reload_interval until Close: a new version
// of a file is loaded without a restart, one that is not a valid database
// is refused, logged and counted, and the version before keeps serving.
// The databases are the running snapshot's, opened when its configuration
// was loaded, so a configuration reload (which opens them again) needs
// nothing more.
func (g *Gateway) watchGeoIP(m *observe.GeoIPMetrics) {
	t := time.NewTimer(g.geoIPInterval())
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
		if gc := g.core.Snap.Load().Cfg.GeoIP; gc != nil {
			for _, n := range gc.DBs() {
				tried, err := n.DB.Poll()
				switch {
				case !tried:
				case err != nil:
					m.ReloadErrors.WithLabelValues(n.Key).Inc()
					g.core.Log.Error("geoip database reload failed; the previous version keeps serving",
						"database", n.Key, "path", n.DB.Path(), "err", err)
				default:
					m.Reloads.WithLabelValues(n.Key).Inc()
					g.core.Log.Info("geoip database reloaded", "database", n.Key, "path", n.DB.Path(),
						"type", n.DB.Metadata().DatabaseType)
				}
			}
		}
		t.Reset(g.geoIPInterval())
	}
}

// geoIPInterval is the running configuration's geoip.reload_interval,
// or a second without a geoip section (a reload may add one).
func (g *Gateway) geoIPInterval() time.Duration {
	if gc := g.core.Snap.Load().Cfg.GeoIP; gc != nil {
		return gc.ReloadInterval
	}
	return time.Second
}
