package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/config"
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

// The reference lists as settings only keys the loader takes: the old
// spellings it refuses (store.redis.on_error, on_store_error) appear only
// among the refused keys, each refused by config.Parse at its line.
func TestReferenceListsNoRefusedKeyAsASetting(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	settings, refusedPart, _ := strings.Cut(string(doc), "## Refused old keys")
	for _, c := range []struct{ key, yaml string }{
		{"store.redis.on_error", "store:\n  redis:\n    url: redis://127.0.0.1:6379\n    on_error: closed\n"},
		{"on_store_error", "on_store_error: refuse\n"},
	} {
		if strings.Contains(settings, "## `"+c.key+"`") || strings.Contains(settings, "### `"+c.key+"`") {
			t.Errorf("%s is listed as a setting", c.key)
		}
		if !strings.Contains(refusedPart, "- `"+c.key+"`: ") {
			t.Errorf("%s is not listed among the refused keys", c.key)
		}
		_, err := config.Parse("c.yaml", []byte(c.yaml))
		ps := config.Problems(err)
		if len(ps) != 1 || ps[0].Pos.Line < 1 || !strings.Contains(ps[0].Msg, "on_error") {
			t.Errorf("%s: %v, want it refused at its line, naming on_error", c.key, err)
		}
	}
}

// The keys that name key parts (a rule's key, an except entry's key,
// tiers.identity) list every part rules.Key's doc comment names, each
// with its words, and the reference shows them; no other key does.
func TestKeyPartsListed(t *testing.T) {
	keys, err := Keys(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ip", "header:NAME", "query:NAME", "path", "method", "host", "global",
		"grpc_service", "grpc_method", "country", "asn", "ja4"}
	withParts := map[string]bool{}
	for _, k := range keys {
		if len(k.Parts) == 0 {
			continue
		}
		withParts[k.Path] = true
		var names []string
		for _, p := range k.Parts {
			name, text, _ := strings.Cut(p, ": ")
			names = append(names, strings.Trim(name, "`"))
			if len(text) < 8 {
				t.Errorf("%s: part %q has no words", k.Path, p)
			}
		}
		if strings.Join(names, " ") != strings.Join(want, " ") {
			t.Errorf("%s: parts %q, want %q", k.Path, names, want)
		}
		if !strings.Contains(k.PartsNote, "missing") {
			t.Errorf("%s: the note after the parts is %q", k.Path, k.PartsNote)
		}
	}
	for _, p := range []string{"rules[].key", "except[].key", "rules[].except[].key", "rules[].tiers.identity"} {
		if !withParts[p] {
			t.Errorf("%s lists no key parts", p)
		}
	}
	if len(withParts) != 4 {
		t.Errorf("keys listing parts: %v, want the 4", withParts)
	}
	md := string(Markdown(keys))
	if n := strings.Count(md, "- `ja4`: the JA4 fingerprint"); n != 4 {
		t.Errorf("the reference lists ja4 %d times, want 4", n)
	}
}
