package config

import (
	"fmt"
	"net/url"

	"go.yaml.in/yaml/v3"
)

// Masked returns c as YAML with its secrets hidden: the password of a
// Redis URL, and the identities (API keys) of tier members, which are
// replaced by their count.
func (c *Config) Masked() ([]byte, error) {
	m := *c
	if r := c.Store.Redis; r != nil {
		rc := *r
		if u, err := url.Parse(rc.URL); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
			}
			rc.URL = u.String()
		}
		m.Store.Redis = &rc
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
