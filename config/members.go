package config

import (
	"errors"
	"fmt"
	"slices"

	"github.com/tollgate-dev/tollgate/internal/stableread"
	"github.com/tollgate-dev/tollgate/rules"
)

// EngineConfig returns the rule engine's part of c, ready for rules.New:
// a copy, in which each tiers' members_file, resolved against the
// configuration file's directory (see Resolve), is read into its
// FileMembers, and each except entry's clients_file and keys_file into
// its FileClients and FileKeys (loadExcept). c is not changed. A file that cannot be read or parsed is
// a *rules.FieldError at its rule's tiers.members_file (errors.Join of
// them all); the copy is returned all the same, without those members.
func (c *Config) EngineConfig() (rules.Config, error) {
	rc := c.Config
	rc.Rules = slices.Clone(c.Rules)
	if g := c.GeoIP; g != nil {
		rc.Geo = g.EngineGeo() // the databases the loading step opened
	}
	var errs []error
	for i := range rc.Rules {
		t := rc.Rules[i].Tiers
		if t == nil || t.MembersFile == "" {
			continue
		}
		loaded := *t
		loaded.MembersFile = c.Resolve(t.MembersFile)
		m, err := readMembers(loaded.MembersFile)
		if err != nil {
			errs = append(errs, &rules.FieldError{Path: fmt.Sprintf("rules[%d].tiers.members_file", i), Err: err})
		}
		loaded.FileMembers = m
		rc.Rules[i].Tiers = &loaded
	}
	errs = append(errs, c.loadExcept(&rc)...)
	return rc, errors.Join(errs...)
}

// MembersFiles returns the members files of c's tiers, resolved against
// the configuration file's directory: the files EngineConfig reads.
func (c *Config) MembersFiles() []string {
	var paths []string
	for _, r := range c.Rules {
		if r.Tiers != nil && r.Tiers.MembersFile != "" {
			paths = append(paths, c.Resolve(r.Tiers.MembersFile))
		}
	}
	return paths
}

// readMembers reads the plan map file at path (rules.ParsePlanMap), of
// at most MaxListFileBytes.
func readMembers(path string) (map[string]string, error) {
	f, err := stableread.Open(path, MaxListFileBytes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return rules.ParsePlanMap(path, f)
}
