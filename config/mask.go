package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-dev/tollgate/rules"
)

// Masked returns c as YAML with its secrets hidden: the password of a
// Redis URL or of a route's upstream URL (which validation refuses, but a
// Config built in code may have), the gossip secret key (secret_key; the
// file and variable it may come from are named, not read), and the identities (API keys) of tier
// members and the keys of except entries, which are replaced by their count.
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
	m.Except = maskExcept(c.Except)
	for i, r := range m.Rules {
		m.Rules[i].Except = maskExcept(r.Except)
		if r.Tiers == nil || len(r.Tiers.Members) == 0 {
			continue
		}
		t := *r.Tiers
		t.Members = map[string]string{fmt.Sprintf("(%d members hidden)", len(r.Tiers.Members)): ""}
		m.Rules[i].Tiers = &t
	}
	return yaml.Marshal(&m)
}

// maskExcept returns list with the keys of its entries (internal API
// keys) replaced by their count; list itself is not changed.
func maskExcept(list []rules.Except) []rules.Except {
	out := list
	for i, x := range list {
		if len(x.Keys) == 0 {
			continue
		}
		if &out[0] == &list[0] {
			out = slices.Clone(list)
		}
		out[i].Keys = []string{fmt.Sprintf("(%d keys hidden)", len(x.Keys))}
	}
	return out
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
