package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/testpki"
)

// TestJA4Warnings: a ja4 key part or matcher on a listener without tls
// (no request has a fingerprint: the rule never applies), and a ja4
// exemption (a fingerprint is copied easily), are valid but warned
// about at their lines; on a TLS listener a ja4 key or matcher is not.
func TestJA4Warnings(t *testing.T) {
	const fp = "t13d1516h2_8daaf6152771_e5627efa2ab1"
	rulesPart := `routes: [{path: /, upstream: "http://127.0.0.1:3000"}]
rules:
  - name: per-ja4
    key: ja4
    policies: [{rate: 1/s}]
  - name: shared
    key: ja4
    anonymous: true
    policies: [{rate: 1/s}]
  - name: one-stack
    match: {ja4: [` + fp + `]}
    except:
      - ja4: [` + fp + `]
    policies: [{rate: 1/s}]
`
	c, err := Parse("c.yaml", []byte("listen: {addr: ':8080'}\n"+rulesPart))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		line int
		text string
	}{
		{5, "warning: rules[0].key[0]: listen has no tls, so no request has a JA4 fingerprint: the rule never applies"},
		{8, "warning: rules[1].key[0]: listen has no tls, so no request has a JA4 fingerprint: every request shares the anonymous counter"},
		{12, "warning: rules[2].match.ja4: listen has no tls, so no request has a JA4 fingerprint: the rule never matches"},
		{14, "warning: rules[2].except[0].ja4: an exemption by TLS fingerprint exempts every client that copies it"},
	}
	ws := c.Warnings()
	if len(ws) != len(want) {
		t.Fatalf("warnings %v", ws)
	}
	for _, w := range want {
		found := false
		for _, got := range ws {
			if got.Pos.Line == w.line && strings.HasPrefix(got.Msg, w.text) {
				found = true
			}
		}
		if !found {
			t.Errorf("no warning at line %d %q in %v", w.line, w.text, ws)
		}
	}

	// Over TLS only the exemption is warned about.
	cert, key, _ := testpki.Server(t)
	dir := t.TempDir()
	for _, f := range []string{cert, key} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	src := "listen: {addr: ':8443', tls: {cert: " + filepath.Base(cert) + ", key: " + filepath.Base(key) + "}}\n" + rulesPart
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if ws := c.Warnings(); len(ws) != 1 || !strings.Contains(ws[0].Msg, "rules[2].except[0].ja4: an exemption by TLS fingerprint") {
		t.Fatalf("over TLS: warnings %v", ws)
	}
}

// TestCountryCodeWarnings: UK and EL, written for GB and GR, are valid
// two-letter codes that no database carries: warned about at their
// lines, in a rule's match, an except entry and a cost.by match; GB is
// not.
func TestCountryCodeWarnings(t *testing.T) {
	src := `routes: [{path: /, upstream: "http://127.0.0.1:3000"}]
geoip: {country: geo.mmdb}
rules:
  - name: r
    match: {countries: [gb, uk]}
    except: [{countries: [EL]}]
    cost: {by: [{match: {countries: [Uk]}, cost: 2}]}
    policies: [{rate: 1/s}]
`
	dir := t.TempDir()
	writeGeo(t, dir)
	c, err := Parse(filepath.Join(dir, "c.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{
		5: "warning: rules[0].match.countries[1]: UK is not an ISO 3166-1 code (databases write GB)",
		6: "warning: rules[0].except[0].countries[0]: EL is not an ISO 3166-1 code (databases write GR)",
		7: "warning: rules[0].cost.by[0].match.countries[0]: UK is not an ISO 3166-1 code (databases write GB)",
	}
	ws := c.Warnings()
	if len(ws) != len(want) {
		t.Fatalf("warnings %v", ws)
	}
	for _, w := range ws {
		if !strings.HasPrefix(w.Msg, want[w.Pos.Line]) {
			t.Errorf("line %d: %q, want %q", w.Pos.Line, w.Msg, want[w.Pos.Line])
		}
	}
}
