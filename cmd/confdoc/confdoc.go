// Command confdoc generates docs/configuration.md, the operator's reference
// to every key of the gateway's YAML file, from the configuration types
// themselves: the keys and their types from config.Config's yaml tags, the
// text from the fields' doc comments (read from the Go source), the default
// from the comment's "Default …" (or "Zero means …") sentence, and an
// example from the first file under examples/ that sets the key.
//
// Run it with `go generate ./config/` (or `go run ./cmd/confdoc` from the
// repository's root); a test fails when a key has no doc comment or when
// the committed file differs from what would be generated.
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-dev/tollgate/config"
	"github.com/tollgate-dev/tollgate/rules"
)

// Key is one documented YAML key.
type Key struct {
	// Path is the key's dotted path from the top of the file; "[]" marks
	// a list's items and "<name>" a map's keys chosen by the operator.
	Path string
	// Type is the value's type in words ("duration", "list of strings").
	Type string
	// Doc is the field's doc comment as plain text ("" when it has none).
	Doc string
	// Default is the sentence of Doc that gives the default, or "".
	Default string
	// Example is "file: value" from the first example that sets the key,
	// or "".
	Example string
	// Section is true for a key whose value is a mapping of further keys.
	Section bool
	// Parts are the key parts a key naming them (rules[].key,
	// except[].key, tiers.identity) takes, each "`name`: what it is",
	// from the doc comment of rules.Key (its indented list), and
	// PartsNote that comment's text after the list; rendered after Doc.
	Parts     []string
	PartsNote string
	// Refused is true for an old spelling that the loader refuses at its
	// line, naming what to write (its field's doc has a "Deprecated:"
	// paragraph): it is no setting, and the reference lists it only
	// among the refused keys, with that paragraph.
	Refused bool
}

// Keys returns every key config.Config accepts, in file order, documented
// from the Go sources and examples found under root (the repository).
func Keys(root string) ([]Key, error) {
	docs := map[string]string{} // "pkgpath.Type.Field" -> doc
	for _, pkg := range []struct{ dir, path string }{
		{"config", "github.com/tollgate-dev/tollgate/config"},
		{"rules", "github.com/tollgate-dev/tollgate/rules"},
		{"store/gossip/gossipconf", "github.com/tollgate-dev/tollgate/store/gossip/gossipconf"},
		{"store/redis/redisconf", "github.com/tollgate-dev/tollgate/store/redis/redisconf"},
		{"adaptive/adaptiveconf", "github.com/tollgate-dev/tollgate/adaptive/adaptiveconf"},
		{"geoip/geoipconf", "github.com/tollgate-dev/tollgate/geoip/geoipconf"},
	} {
		if err := fieldDocs(filepath.Join(root, pkg.dir), pkg.path, docs); err != nil {
			return nil, err
		}
	}
	var keys []Key
	walk(reflect.TypeFor[config.Config](), "", docs, &keys)
	examples, err := exampleValues(filepath.Join(root, "examples"))
	if err != nil {
		return nil, err
	}
	for i := range keys {
		keys[i].Example = examples[keys[i].Path]
	}
	return keys, nil
}

// fieldDocs reads the doc comment of every struct field in the package's
// non-test Go files in dir.
func fieldDocs(dir, pkgPath string, docs map[string]string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if gd, ok := n.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
				// A type's own doc, under "pkgpath.Type": on the spec,
				// or on the declaration of a single one.
				for _, sp := range gd.Specs {
					ts := sp.(*ast.TypeSpec)
					if ts.Doc != nil {
						docs[pkgPath+"."+ts.Name.Name] = ts.Doc.Text()
					} else if gd.Doc != nil && len(gd.Specs) == 1 {
						docs[pkgPath+"."+ts.Name.Name] = gd.Doc.Text()
					}
				}
				return true
			}
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			for _, fld := range st.Fields.List {
				text := ""
				if fld.Doc != nil {
					text = fld.Doc.Text()
				}
				for _, n := range fld.Names {
					docs[pkgPath+"."+ts.Name.Name+"."+n.Name] = text
				}
				if len(fld.Names) == 0 { // embedded: named after its type
					docs[pkgPath+"."+ts.Name.Name+"."+typeName(fld.Type)] = text
				}
			}
			return false
		})
	}
	return nil
}

func typeName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.SelectorExpr:
		return t.Sel.Name
	case *ast.StarExpr:
		return typeName(t.X)
	}
	return ""
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	keyType      = reflect.TypeFor[rules.Key]()
	exceptType   = reflect.TypeFor[rules.Except]()
)

// namesKeyParts reports whether field f of owner is a key made of key
// parts (a rules.Key) or names one (rules.Except.Key).
func namesKeyParts(owner reflect.Type, f reflect.StructField) bool {
	return f.Type == keyType || owner == exceptType && f.Name == "Key"
}

// keyParts reads the list of key parts from rules.Key's doc comment:
// its indented block, one part a line ("name   what it is", continued
// on lines indented further), and the text after it.
func keyParts(doc string) (parts []string, note string) {
	var after []string
	inBlock := false
	for _, line := range strings.Split(doc, "\n") {
		indented := strings.HasPrefix(line, "\t") || strings.HasPrefix(line, " ")
		switch {
		case indented && strings.TrimSpace(line) != "":
			inBlock = true
			body := strings.TrimPrefix(line, "\t")
			if body != "" && body[0] != ' ' && body[0] != '\t' {
				name, text, _ := strings.Cut(body, " ")
				parts = append(parts, "`"+name+"`: "+strings.Join(strings.Fields(text), " "))
			} else if len(parts) > 0 {
				parts[len(parts)-1] += " " + strings.Join(strings.Fields(body), " ")
			}
		case inBlock && len(parts) > 0:
			after = append(after, line)
		}
	}
	return parts, strings.Join(strings.Fields(strings.Join(after, " ")), " ")
}

// walk appends the keys of struct type t under prefix.
func walk(t reflect.Type, prefix string, docs map[string]string, keys *[]Key) {
	yamlFields(t, func(owner reflect.Type, tag string, f reflect.StructField) {
		path := tag
		if prefix != "" {
			path = prefix + "." + tag
		}
		d := docs[owner.PkgPath()+"."+owner.Name()+"."+f.Name]
		text := strings.Join(strings.Fields(d), " ")
		if rest, ok := strings.CutPrefix(text, f.Name+" "); ok {
			text = "`" + tag + "` " + rest // the operator's name, not Go's
		}
		k := Key{Path: path, Type: describe(f.Type), Doc: text, Default: defaultOf(text)}
		if _, instead, ok := strings.Cut(text, "Deprecated: "); ok {
			k.Refused, k.Doc, k.Default = true, instead, ""
		}
		if namesKeyParts(owner, f) {
			k.Parts, k.PartsNote = keyParts(docs[keyType.PkgPath()+"."+keyType.Name()])
		}
		sub, suffix := structBelow(f.Type)
		k.Section = sub != nil
		*keys = append(*keys, k)
		if sub != nil {
			walk(sub, path+suffix, docs, keys)
		}
	})
}

// yamlFields calls fn for each field of struct type t that is a YAML key,
// in order, with its key and the struct type declaring it: an inline
// struct's fields are t's own.
func yamlFields(t reflect.Type, fn func(owner reflect.Type, tag string, f reflect.StructField)) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if opts == "inline" {
			yamlFields(f.Type, fn)
			continue
		}
		if tag == "" {
			tag = strings.ToLower(f.Name)
		}
		fn(t, tag, f)
	}
}

// structBelow returns the struct type a field's value holds keys of, and
// the path suffix that reaches it ("[]" for a list, ".<name>" for a map).
func structBelow(t reflect.Type) (reflect.Type, string) {
	suffix := ""
	for {
		switch t.Kind() {
		case reflect.Pointer:
			t = t.Elem()
			continue
		case reflect.Slice:
			suffix += "[]"
			t = t.Elem()
			continue
		case reflect.Map:
			suffix += ".<name>"
			t = t.Elem()
			continue
		case reflect.Struct:
			if t == durationType {
				return nil, ""
			}
			return t, suffix
		}
		return nil, ""
	}
}

// describe names a field's type for an operator.
func describe(t reflect.Type) string {
	switch {
	case t == durationType:
		return "duration"
	case t.Kind() == reflect.Pointer:
		return describe(t.Elem())
	case t.Kind() == reflect.Slice:
		return "list of " + plural(describe(t.Elem()))
	case t.Kind() == reflect.Map:
		return "map of names to " + plural(describe(t.Elem()))
	case t.Kind() == reflect.Struct:
		return "mapping"
	case t.Kind() == reflect.Bool:
		return "boolean"
	case t.Kind() == reflect.String:
		return "string"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "integer"
	}
	return t.Kind().String()
}

func plural(s string) string {
	if strings.HasPrefix(s, "list of ") || strings.HasPrefix(s, "map of ") {
		return s
	}
	if s == "mapping" {
		return "mappings"
	}
	return s + "s"
}

// defaultRE finds the sentence that gives a field's default.
var defaultRE = regexp.MustCompile(`(?:^|[.;:] )((?:Default|Zero means|Empty means|Zero \(the default\)|Empty \(the default\))[^.;]*(?:\.[0-9][^.;]*)*)`)

func defaultOf(doc string) string {
	m := defaultRE.FindStringSubmatch(doc)
	if m == nil {
		return ""
	}
	d := strings.TrimSpace(m[1])
	if rest, ok := strings.CutPrefix(d, "Default"); ok {
		d = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ":"))
	}
	return d
}

// exampleValues maps each key path to "file: value" for the first example
// file (in name order) that sets it.
func exampleValues(dir string) (map[string]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	out := map[string]string{}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(doc.Content) == 0 {
			continue
		}
		collect(doc.Content[0], reflect.TypeFor[config.Config](), "", "examples/"+filepath.Base(name), out)
	}
	return out, nil
}

// collect walks node as a value of struct type t, recording the first
// example of every key.
func collect(node *yaml.Node, t reflect.Type, prefix, file string, out map[string]string) {
	if node.Kind != yaml.MappingNode {
		return
	}
	fields := map[string]reflect.Type{}
	indexFields(t, fields)
	for i := 0; i+1 < len(node.Content); i += 2 {
		name, val := node.Content[i].Value, node.Content[i+1]
		ft, ok := fields[name]
		if !ok {
			continue
		}
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		if _, seen := out[path]; !seen {
			out[path] = file + ": " + render(val)
		}
		collectValue(val, ft, path, file, out)
	}
}

// collectValue descends into a value of type t at path.
func collectValue(val *yaml.Node, t reflect.Type, path, file string, out map[string]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Slice && val.Kind == yaml.SequenceNode:
		for _, item := range val.Content {
			collectValue(item, t.Elem(), path+"[]", file, out)
		}
	case t.Kind() == reflect.Map && val.Kind == yaml.MappingNode:
		for i := 1; i < len(val.Content); i += 2 {
			collectValue(val.Content[i], t.Elem(), path+".<name>", file, out)
		}
	case t.Kind() == reflect.Struct && t != durationType:
		collect(val, t, path, file, out)
	}
}

func indexFields(t reflect.Type, fields map[string]reflect.Type) {
	yamlFields(t, func(_ reflect.Type, tag string, f reflect.StructField) { fields[tag] = f.Type })
}

// render shows a YAML value on one line, in flow style, cut at 100 bytes.
func render(n *yaml.Node) string {
	c := *n
	setFlow(&c)
	b, err := yaml.Marshal(&c)
	if err != nil {
		return "(unprintable)"
	}
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}

func setFlow(n *yaml.Node) {
	n.Style |= yaml.FlowStyle
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	for i, c := range n.Content {
		cp := *c
		setFlow(&cp)
		n.Content[i] = &cp
	}
}

// Markdown renders keys as docs/configuration.md.
func Markdown(keys []Key) []byte {
	var b bytes.Buffer
	b.WriteString(`# Configuration reference

<!-- Generated by cmd/confdoc from the configuration types' doc
comments and examples/: edit those, then run go generate ./config/ -->

Every key of the file given to ` + "`tollgate serve -config FILE`" + ` and
` + "`tollgate check FILE`" + `. Unknown keys are refused, and every problem is
reported at once with its file:line. Durations use Go's syntax (` + "`250ms`" + `,
` + "`2s`" + `, ` + "`1m30s`" + `). In a path, ` + "`[]`" + ` stands for each item of a list and
` + "`<name>`" + ` for a name the operator chooses. The examples come from the files
in ` + "`examples/`" + `.

`)
	var refused []Key
	for _, k := range keys {
		if k.Refused {
			refused = append(refused, k)
			continue
		}
		depth := strings.Count(k.Path, ".") - strings.Count(k.Path, ".<name>")
		if depth == 0 {
			fmt.Fprintf(&b, "## `%s`\n\n", k.Path)
		} else {
			fmt.Fprintf(&b, "### `%s`\n\n", k.Path)
		}
		fmt.Fprintf(&b, "- type: %s\n", k.Type)
		if k.Default != "" {
			fmt.Fprintf(&b, "- default: %s\n", k.Default)
		}
		if k.Example != "" && !k.Section {
			file, val, _ := strings.Cut(k.Example, ": ")
			fmt.Fprintf(&b, "- example (%s): `%s`\n", file, strings.ReplaceAll(val, "`", "'"))
		}
		b.WriteString("\n")
		if k.Doc != "" {
			b.WriteString(k.Doc + "\n\n")
		}
		if len(k.Parts) > 0 {
			b.WriteString("Key parts:\n\n")
			for _, p := range k.Parts {
				b.WriteString("- " + p + "\n")
			}
			b.WriteString("\n")
			if k.PartsNote != "" {
				b.WriteString(k.PartsNote + "\n\n")
			}
		}
	}
	if len(refused) > 0 {
		b.WriteString("## Refused old keys\n\n" +
			"These old spellings are no settings: a file that sets one is refused, at\n" +
			"its line, with the setting to write instead.\n\n")
		for _, k := range refused {
			fmt.Fprintf(&b, "- `%s`: %s\n", k.Path, k.Doc)
		}
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}
