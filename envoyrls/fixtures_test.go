package envoyrls

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readFixture(t *testing.T, name string) Source {
	t.Helper()
	path := filepath.Join("testdata", "envoyproxy", name)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return Source{Name: name, Data: data}
}

// The valid fixtures of envoyproxy/ratelimit load, alone.
func TestEnvoyproxyValidFixturesLoad(t *testing.T) {
	for _, name := range []string{
		"basic_config.yaml", "shadowmode_config.yaml", "wildcard.yaml", "share_threshold.yaml",
		"merge_domain_key1.yaml", "merge_domain_key2.yaml", "duplicate_domain.yaml",
	} {
		t.Run(name, func(t *testing.T) {
			l, err := Build([]Source{readFixture(t, name)})
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if l.Domains() != 1 {
				t.Fatalf("%d domains, want 1", l.Domains())
			}
		})
	}
}

// The invalid fixtures are refused with envoyproxy/ratelimit's message
// (its config_test.go), now placed at a line where there is one.
func TestEnvoyproxyInvalidFixturesAreRefusedWithItsMessage(t *testing.T) {
	for _, tc := range []struct {
		files []string
		want  string // envoyproxy/ratelimit's message after "file: "
		line  int    // the line named, 0 for none
	}{
		{[]string{"empty_domain.yaml"}, "config file cannot have empty domain", 1},
		{[]string{"basic_config.yaml", "duplicate_domain.yaml"}, "duplicate domain 'test-domain' in config file", 1},
		{[]string{"empty_key.yaml"}, "descriptor has empty key", 3},
		{[]string{"duplicate_key.yaml"}, "duplicate descriptor composite key 'test-domain.key1_value1'", 6},
		{[]string{"merge_domain_key1.yaml", "merge_domain_key1.yaml"}, "duplicate domain 'test-domain' in config file", 2},
		{[]string{"bad_limit_unit.yaml"}, "invalid rate limit unit 'foo'", 6},
		{[]string{"replaces_self.yaml"}, "replaces should not contain name of same descriptor", 10},
		{[]string{"replaces_empty.yaml"}, "should not have an empty replaces entry", 10},
		{[]string{"bad_yaml.yaml"}, "error loading config file: yaml: line 2: found unexpected end of stream", 2},
		{[]string{"misspelled_key.yaml"}, "config error, unknown key 'ratelimit'", 5},
		{[]string{"misspelled_key2.yaml"}, "config error, unknown key 'requestsperunit'", 7},
		{[]string{"non_string_key.yaml"}, "config error, key is not of type string: 0.25", 1},
		{[]string{"non_map_list.yaml"}, "config error, yaml file contains list of type other than map: a", 3},
		{[]string{"unlimited_with_unit.yaml"}, "should not specify rate limit unit when unlimited", 6},
		// tollgate's: the pinned version knows no metadata key, and
		// refuses a float where yaml.v2 decodes no int.
		{[]string{"tollgate_metadata_invalid.yaml"}, "config error, unknown key 'metadata'", 12},
		{[]string{"tollgate_float_invalid.yaml"}, "error checking config", 6},
	} {
		t.Run(strings.Join(tc.files, "+"), func(t *testing.T) {
			var srcs []Source
			for _, f := range tc.files {
				srcs = append(srcs, readFixture(t, f))
			}
			_, err := Build(srcs)
			ps := Problems(err)
			if len(ps) == 0 {
				t.Fatalf("loaded; want %q", tc.want)
			}
			p := ps[0]
			if !strings.HasPrefix(p.Msg, tc.want) {
				t.Errorf("message %q, want %q", p.Msg, tc.want)
			}
			if p.File != tc.files[len(tc.files)-1] || p.Line != tc.line {
				t.Errorf("at %s:%d, want %s:%d (%v)", p.File, p.Line, tc.files[len(tc.files)-1], tc.line, p)
			}
		})
	}
}

// A rate limit service never learns the upstream's answer: a key asking
// to count on it is refused by name, where it stands, in a descriptor
// and in a rate_limit.
func TestCountKeyRefused(t *testing.T) {
	for _, tc := range []struct{ name, yaml string }{
		{"descriptor", "domain: d\ndescriptors:\n  - key: login\n    count: [401]\n    rate_limit: {unit: minute, requests_per_unit: 5}\n"},
		{"rate_limit", "domain: d\ndescriptors:\n  - key: login\n    rate_limit:\n      unit: minute\n      requests_per_unit: 5\n      tollgate_count: [401]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build([]Source{{Name: "login.yaml", Data: []byte(tc.yaml)}})
			if err == nil || !strings.Contains(err.Error(), "counting on the answer is not possible") || !strings.Contains(err.Error(), "login.yaml:") {
				t.Fatalf("Build: %v; want the count key refused at file:line", err)
			}
		})
	}
}
