package confdoc

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const root = "../.."

// TestReferenceIsCurrent fails when docs/configuration.md is not what the
// configuration types and examples generate: run go generate ./config/.
func TestReferenceIsCurrent(t *testing.T) {
	keys, err := Keys(root)
	if err != nil {
		t.Fatal(err)
	}
	want := append(Markdown(keys), '\n')
	got, err := os.ReadFile(filepath.Join(root, "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("docs/configuration.md is stale: run go generate ./config/")
	}
}

// TestEveryKeyIsDocumented fails when a key the gateway accepts has no doc
// comment on its field.
func TestEveryKeyIsDocumented(t *testing.T) {
	keys, err := Keys(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) < 50 {
		t.Fatalf("only %d keys found; the walk lost some", len(keys))
	}
	for _, k := range keys {
		if strings.TrimSpace(k.Doc) == "" {
			t.Errorf("%s has no doc comment on its field", k.Path)
		}
	}
}

// TestKnownKeys pins a few keys, their types, defaults and examples, so
// that a walk that loses them cannot pass.
func TestKnownKeys(t *testing.T) {
	keys, err := Keys(root)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]Key{}
	for _, k := range keys {
		byPath[k.Path] = k
	}
	for _, c := range []struct{ path, typ, def, example string }{
		{"listen.addr", "string", `":8080"`, ""},
		{"upstream.dial_timeout", "duration", "5s", ""},
		{"rules[].policies[].algorithm", "string", "", "examples/"},
		{"rules[].tiers.plans.<name>[].rate", "string", "", "examples/api-key-tiers.yaml"},
		{"client_ip.trusted_proxies", "list of strings", "", "examples/"},
	} {
		k, ok := byPath[c.path]
		if !ok {
			t.Errorf("%s: missing", c.path)
			continue
		}
		if k.Type != c.typ || (c.def != "" && k.Default != c.def) || !strings.HasPrefix(k.Example, c.example) {
			t.Errorf("%s: %+v", c.path, k)
		}
	}
}
