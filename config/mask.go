package config

import (
	"fmt"
	"net/url"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Masked returns c as YAML with its secrets hidden: the password of a
// Redis URL or of a route's upstream URL (which validation refuses, but a
// Config built in code may have), the gossip secret key (secret_key; the
// file and variable it may come from are named, not read), and the identities (API keys) of tier
// members, which are replaced by their count.
func (c *Config) Masked() ([]byte, error) {
	m := *c
	if r := c.Store.Redis; r != nil {
		rc := *r
		rc.URL = maskURL(rc.URL)
		m.Store.Redis = &rc
	}
	if g := c.Store.Gossip; g != nil {
		gc := *g
		if gc.SecretKey != "" {
			gc.SecretKey = "xxxxx"
		}
		gc.Key = nil
		m.Store.Gossip = &gc
	}
	m.Routes = append(m.Routes[:0:0], c.Routes...)
	for i := range m.Routes {
		m.Routes[i].Upstream = maskURL(m.Routes[i].Upstream)
	}
	m.Rules = append(m.Rules[:0:0], c.Rules...)
	for i, r := range m.Rules {
		if r.Tiers == nil || len(r.Tiers.Members) == 0 {
			continue
		}
		t := *r.Tiers
		t.Members = map[string]string{fmt.Sprintf("(%d members hidden)", len(r.Tiers.Members)): ""}
		m.Rules[i].Tiers = &t
	}
	return yaml.Marshal(&m)
}

// maskURL returns s with the password of its user info replaced by xxxxx.
// A URL that does not parse, whose user info cannot be found, is shown
// only when it holds no '@' (so no user info).
func maskURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if strings.Contains(s, "@") {
			return "xxxxx (an unparseable URL with user info)"
		}
		return s
	}
	if u.User == nil {
		return s
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
