package config

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/stableread"
	"github.com/tollgate-dev/tollgate/rules"
)

// loadExcept reads the clients_file and keys_file of every except entry
// of rc (the top-level one and each rule's) into the entry's FileClients
// and FileKeys, as EngineConfig reads members files: rc's slices are
// copied first (c is not changed), each file is resolved against the
// configuration file's directory, and a file that cannot be read or
// parsed is a *rules.FieldError at its field, naming the file's line.
// The entry then has no file entries (an empty list, so the rule engine
// does not report it again as not loaded).
func (c *Config) loadExcept(rc *rules.Config) []error {
	var errs []error
	load := func(list []rules.Except, at string) []rules.Except {
		if !hasExceptFiles(list) {
			return list
		}
		list = slices.Clone(list)
		for i := range list {
			x := &list[i]
			if x.ClientsFile != "" {
				path := c.Resolve(x.ClientsFile)
				v, err := readList(path, rules.ParseClientsFile)
				if err != nil {
					errs = append(errs, &rules.FieldError{Path: fmt.Sprintf("%s[%d].clients_file", at, i), Err: err})
				}
				x.ClientsFile, x.FileClients = path, v
			}
			if x.KeysFile != "" {
				path := c.Resolve(x.KeysFile)
				v, err := readList(path, rules.ParseKeysFile)
				if err != nil {
					errs = append(errs, &rules.FieldError{Path: fmt.Sprintf("%s[%d].keys_file", at, i), Err: err})
				}
				x.KeysFile, x.FileKeys = path, v
			}
		}
		return list
	}
	rc.Except = load(rc.Except, "except")
	for i := range rc.Rules {
		rc.Rules[i].Except = load(rc.Rules[i].Except, fmt.Sprintf("rules[%d].except", i))
	}
	return errs
}

func hasExceptFiles(list []rules.Except) bool {
	for _, x := range list {
		if x.ClientsFile != "" || x.KeysFile != "" {
			return true
		}
	}
	return false
}

// ExceptFiles returns the clients and keys files of c's except entries,
// resolved against the configuration file's directory: the files
// EngineConfig reads, watched as the members files are.
func (c *Config) ExceptFiles() []string {
	var paths []string
	add := func(list []rules.Except) {
		for _, x := range list {
			for _, f := range []string{x.ClientsFile, x.KeysFile} {
				if f != "" {
					paths = append(paths, c.Resolve(f))
				}
			}
		}
	}
	add(c.Except)
	for _, r := range c.Rules {
		add(r.Except)
	}
	return paths
}

// readList reads the list file at path, of at most MaxListFileBytes,
// with parse (one of the rule engine's list parsers). Its entries are never nil.
func readList(path string, parse func(string, io.Reader) ([]string, error)) ([]string, error) {
	f, err := stableread.Open(path, MaxListFileBytes)
	if err != nil {
		return []string{}, err
	}
	defer f.Close()
	v, err := parse(path, f)
	if err != nil {
		return []string{}, err
	}
	return v, nil
}

// describeExcept says what one except entry exempts, in words: "clients
// in 3 prefixes + file x (120 entries), path /health", "key
// header:X-API-Key in 2 values". ownKey is the rule's key, for an entry
// listing it. Keys are counted, never shown.
func (c *Config) describeExcept(x rules.Except, ownKey string) string {
	var parts []string
	list := func(n int, unit, file string, parse func(string, io.Reader) ([]string, error)) string {
		var s string
		if n > 0 {
			s = fmt.Sprintf("%d %s", n, unit)
		}
		if file != "" {
			path := c.Resolve(file)
			if s != "" {
				s += " + "
			}
			s += "file " + path
			v, err := readList(path, parse)
			if err != nil {
				s += " (unreadable now)"
			} else {
				s += fmt.Sprintf(" (%d entries)", len(v))
			}
		}
		return s
	}
	if len(x.Clients) > 0 || x.ClientsFile != "" {
		parts = append(parts, "clients in "+list(len(x.Clients), "prefixes", x.ClientsFile, rules.ParseClientsFile))
	}
	m := x.Match
	m.Clients = nil
	if d := describeMatch(m); d != "every request" {
		parts = append(parts, d)
	}
	if len(x.Keys) > 0 || x.KeysFile != "" {
		key := x.Key
		if key == "" {
			key = ownKey
		}
		parts = append(parts, "key "+key+" in "+list(len(x.Keys), "values", x.KeysFile, rules.ParseKeysFile))
	}
	return strings.Join(parts, ", ")
}
