package config

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/rules"
)

// describeGeoIP writes the geoip section's line: the databases, what
// they are and when they were built, and how often they are checked.
func (c *Config) describeGeoIP(w io.Writer) {
	g := c.GeoIP
	if g == nil {
		return
	}
	var parts []string
	for _, n := range g.DBs() {
		md := n.DB.Metadata()
		what := n.Key
		if n.Key == "country" && g.ASN == g.Country {
			what = "country and asn"
		}
		built := time.Unix(int64(md.BuildEpoch), 0).UTC().Format("2006-01-02")
		parts = append(parts, fmt.Sprintf("%s from %s (%s, built %s)", what, n.DB.Path(), md.DatabaseType, built))
	}
	fmt.Fprintf(w, "geoip    %s; checked for a new version every %v\n", strings.Join(parts, ", "), g.ReloadInterval)
}

// describeGeoMatch appends the countries, asns and ja4 of m, in words.
func describeGeoMatch(parts []string, m rules.Match) []string {
	if len(m.Countries) > 0 {
		cs := make([]string, len(m.Countries))
		for i, s := range m.Countries {
			cs[i], _ = rules.ParseCountry(s)
			if cs[i] == rules.UnknownCountry {
				cs[i] += " (not in the database)"
			}
		}
		parts = append(parts, "client country "+strings.Join(cs, "|"))
	}
	if len(m.ASNs) > 0 {
		as := make([]string, len(m.ASNs))
		for i, n := range m.ASNs {
			as[i] = "AS" + strconv.FormatUint(uint64(n), 10)
		}
		parts = append(parts, "client network "+strings.Join(as, "|"))
	}
	if len(m.JA4) > 0 {
		parts = append(parts, fmt.Sprintf("TLS fingerprint (JA4) one of %d: %s", len(m.JA4), strings.Join(m.JA4, "|")))
	}
	return parts
}

// describeKey is r's key in words: each part, the geo and fingerprint
// ones explained.
func describeKey(r rules.Rule) string {
	if len(r.Key) == 0 {
		return "ip"
	}
	parts := make([]string, len(r.Key))
	for i, p := range r.Key {
		switch strings.ToLower(strings.TrimSpace(p)) {
		case "country":
			parts[i] = "country (of the client IP; XX when the database has none)"
		case "asn":
			parts[i] = "asn (of the client IP; 0 when the database has none)"
		case "ja4":
			if r.Anonymous {
				parts[i] = "ja4 (TLS fingerprint; requests without TLS share one counter)"
			} else {
				parts[i] = "ja4 (TLS fingerprint; requests without TLS are not counted)"
			}
		default:
			parts[i] = p
		}
	}
	return strings.Join(parts, "+")
}
