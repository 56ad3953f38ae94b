package observe

import "github.com/prometheus/client_golang/prometheus"

// GeoIPMetrics count the geoip databases' reloads (gateway/geoip.go), by
// database: "country", "asn" (one file that is both counts as country).
type GeoIPMetrics struct {
	Reloads      *prometheus.CounterVec // database
	ReloadErrors *prometheus.CounterVec // database
}

// NewGeoIPMetrics registers the geoip counters on reg.
func NewGeoIPMetrics(reg *prometheus.Registry) *GeoIPMetrics {
	m := &GeoIPMetrics{
		Reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_geoip_reloads_total",
			Help: "New versions of a geoip database file loaded without a restart, by database (country, asn).",
		}, []string{"database"}),
		ReloadErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_geoip_reload_errors_total",
			Help: "New versions of a geoip database file refused (unreadable, not a valid database, changed while read), by database; the version before keeps serving.",
		}, []string{"database"}),
	}
	reg.MustRegister(m.Reloads, m.ReloadErrors)
	for _, db := range []string{"country", "asn"} {
		m.Reloads.WithLabelValues(db)
		m.ReloadErrors.WithLabelValues(db)
	}
	return m
}
