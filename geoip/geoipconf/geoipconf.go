// Package geoipconf is the configuration of the geoip databases (the
// top-level geoip: section of a configuration file): which files answer
// the country and asn key parts and matchers, and how often they are
// checked for a new version. Package config embeds Config; the gateway
// polls the databases it opened.
//
// The steps are explicit and in this order, as in the other component
// sections (store/redis/redisconf): Defaults fills the zero fields,
// Validate reports every problem as a *fielderr.Error at its key's path,
// and Read opens the databases (the loading step: a configuration reload
// opens them again, and a file that is missing or not a valid database
// fails the load at its key's line, the running configuration serving
// on).
package geoipconf

import (
	"net/netip"
	"time"

	"github.com/tollgate-dev/tollgate/geoip"
	"github.com/tollgate-dev/tollgate/internal/fielderr"
	"github.com/tollgate-dev/tollgate/rules"
)

// DefaultReloadInterval is ReloadInterval's default: geoipupdate's
// databases change weekly or twice a week, and a stat a minute costs
// nothing.
const DefaultReloadInterval = time.Minute

// MinReloadInterval is the least ReloadInterval.
const MinReloadInterval = time.Second

// Config is the geoip section.
type Config struct {
	// Country is a MaxMind-format country database (GeoLite2-Country,
	// GeoIP2-Country, or a City database, which holds the same country
	// field): it answers the country key part and match.countries. A
	// relative path is resolved against the configuration file's
	// directory. tollgate ships none: MaxMind's licence forbids
	// redistributing GeoLite2; download it with geoipupdate under your
	// own account (or use another provider's MMDB file with MaxMind's
	// field names).
	Country string `yaml:"country"`
	// ASN is a MaxMind-format autonomous system database (GeoLite2-ASN,
	// GeoIP2-ISP): it answers the asn key part and match.asns. It may be
	// the same file as Country when one database holds both. At least
	// one of country and asn.
	ASN string `yaml:"asn"`
	// ReloadInterval is how often each file is checked for a new version
	// (its size, modification time or inode changed): a new version is
	// loaded without a restart, and one that is not a valid database (or
	// is larger than 256 MiB, geoip.MaxDatabaseBytes) is refused, logged
	// and counted (tollgate_geoip_reload_errors_total),
	// the version before serving on. Replace a file by renaming a
	// complete one over it, as geoipupdate does. Default 1m; at least
	// 1s.
	ReloadInterval time.Duration `yaml:"reload_interval"`

	geo *geoip.Geo // what Read opened
}

// Defaults fills the zero fields.
func (c *Config) Defaults() {
	if c.ReloadInterval == 0 {
		c.ReloadInterval = DefaultReloadInterval
	}
}

// Validate reports c's problems, at their keys under at ("geoip"). It
// reads no file.
func (c *Config) Validate(at string) error {
	var l fielderr.List
	if c.Country == "" && c.ASN == "" {
		l.Add(at, "%s: set country (a GeoLite2/GeoIP2 Country or City database), asn (a GeoLite2/GeoIP2 ASN database) or both", at)
	}
	if c.ReloadInterval < MinReloadInterval {
		l.Add(at+".reload_interval", "%s.reload_interval %v must be at least %v", at, c.ReloadInterval, MinReloadInterval)
	}
	return l.Err()
}

// Read opens the databases, each path through resolve (relative to the
// configuration file's directory). A file that cannot be opened is a
// problem at its key.
func (c *Config) Read(at string, resolve func(string) string) error {
	var l fielderr.List
	g := &geoip.Geo{}
	open := func(key, path string) *geoip.DB {
		if path == "" {
			return nil
		}
		db, err := geoip.Open(resolve(path))
		if err != nil {
			l.Add(at+"."+key, "%s.%s: %v", at, key, err)
			return nil
		}
		return db
	}
	g.Countries = open("country", c.Country)
	if c.ASN == c.Country {
		g.ASNs = g.Countries
	} else {
		g.ASNs = open("asn", c.ASN)
	}
	if err := l.Err(); err != nil {
		return err
	}
	c.geo = g
	return nil
}

// Geo is what Read opened (the rule engine's Config.Geo), or nil before
// Read or after it failed.
func (c *Config) Geo() *geoip.Geo { return c.geo }

// EngineGeo is the rule engine's Config.Geo: the databases Read opened,
// or, before Read or after it failed, a Geo that answers nothing but
// covers what the section names, so that a file that could not be opened
// is reported once, at its key, and not again at every rule using it.
func (c *Config) EngineGeo() rules.Geo {
	if c.geo != nil {
		return c.geo
	}
	return unopened{country: c.Country != "", asn: c.ASN != ""}
}

type unopened struct{ country, asn bool }

func (unopened) Country(netip.Addr) string { return "" }
func (unopened) ASN(netip.Addr) uint32     { return 0 }
func (u unopened) HasCountry() bool        { return u.country }
func (u unopened) HasASN() bool            { return u.asn }

// DBs are the databases Read opened, each once, with the key that names
// it ("country", "asn", or "country" for one file that is both).
func (c *Config) DBs() []Named {
	if c.geo == nil {
		return nil
	}
	var out []Named
	if c.geo.Countries != nil {
		out = append(out, Named{"country", c.geo.Countries})
	}
	if c.geo.ASNs != nil && c.geo.ASNs != c.geo.Countries {
		out = append(out, Named{"asn", c.geo.ASNs})
	}
	return out
}

// Named is a database and the key of the section that names it.
type Named struct {
	Key string
	DB  *geoip.DB
}
