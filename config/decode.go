package config

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// decoder fills Go values from a YAML node tree strictly: every key must
// name a field, every value must have the field's type, and every problem is
// recorded rather than stopping at the first.
type decoder struct {
	file string
	ps   *problems
	// paths, when not nil, records the position of every value by its
	// path ("rules[2].policies[0].rate").
	paths map[string]Pos
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	posType      = reflect.TypeFor[Pos]()
)

func (d *decoder) pos(n *yaml.Node) Pos { return Pos{File: d.file, Line: n.Line, Col: n.Column} }

// parseDocument decodes data into out (a pointer to a struct).
func (d *decoder) parseDocument(data []byte, out any) {
	// A file with no document is not a configuration of defaults: it is
	// most likely one truncated or caught mid-write, and loading it would
	// drop every route and rule.
	if len(bytes.TrimSpace(data)) == 0 {
		d.ps.add(Pos{File: d.file}, "the file is empty: no configuration")
		return
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		d.ps.add(syntaxPos(d.file, err), "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		return
	}
	if doc.Kind == 0 || len(doc.Content) == 0 || isNull(doc.Content[0]) {
		d.ps.add(Pos{File: d.file}, "the file holds no YAML document (only comments or null): no configuration")
		return
	}
	d.value(doc.Content[0], reflect.ValueOf(out).Elem(), "")
}

var lineRE = regexp.MustCompile(`line (\d+)`)

// syntaxPos extracts the line from a yaml syntax error message.
func syntaxPos(file string, err error) Pos {
	if m := lineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return Pos{File: file, Line: n, Col: 1}
	}
	return Pos{File: file}
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!int":
			return "an integer"
		case "!!bool":
			return "a boolean"
		case "!!float":
			return "a number"
		case "!!null":
			return "null"
		}
		return fmt.Sprintf("the string %q", n.Value)
	}
	return "an unsupported node"
}

// value decodes n into v; what names v in messages ("rules[2].rate").
func (d *decoder) value(n *yaml.Node, v reflect.Value, what string) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if d.paths != nil && what != "" {
		if _, ok := d.paths[what]; !ok {
			d.paths[what] = d.pos(n)
		}
	}
	if isNull(n) {
		return // keep the zero value; defaults fill it
	}
	label := what
	if label == "" {
		label = "the document"
	}
	t := v.Type()
	switch {
	case t == durationType:
		if n.Kind != yaml.ScalarNode {
			d.ps.add(d.pos(n), "%s: want a duration such as 5s, got %s", label, kindName(n))
			return
		}
		dur, err := time.ParseDuration(n.Value)
		if err != nil || dur < 0 {
			d.ps.add(d.pos(n), "%s: %q is not a duration such as 500ms, 5s or 1m", label, n.Value)
			return
		}
		v.SetInt(int64(dur))
		return
	case t.Kind() == reflect.Pointer:
		p := reflect.New(t.Elem())
		d.value(n, p.Elem(), what)
		v.Set(p)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		d.structure(n, v, what, label)
	case reflect.Slice:
		if n.Kind == yaml.ScalarNode && t.Elem().Kind() == reflect.String {
			// A single string where a list of strings is expected:
			// "key: ip" is "key: [ip]".
			s := reflect.MakeSlice(t, 1, 1)
			d.value(n, s.Index(0), what+"[0]")
			v.Set(s)
			return
		}
		if n.Kind != yaml.SequenceNode {
			d.ps.add(d.pos(n), "%s: want a list, got %s", label, kindName(n))
			return
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, c := range n.Content {
			d.value(c, s.Index(i), fmt.Sprintf("%s[%d]", what, i))
		}
		v.Set(s)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.ps.add(d.pos(n), "%s: want a mapping, got %s", label, kindName(n))
			return
		}
		m := reflect.MakeMapWithSize(t, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, c := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				d.ps.add(d.pos(k), "%s: keys must be strings", label)
				continue
			}
			if m.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
				d.ps.add(d.pos(k), "%s: duplicate key %q", label, k.Value)
				continue
			}
			e := reflect.New(t.Elem()).Elem()
			d.value(c, e, what+"."+k.Value)
			m.SetMapIndex(reflect.ValueOf(k.Value), e)
		}
		v.Set(m)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.ps.add(d.pos(n), "%s: want a string, got %s", label, kindName(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			d.ps.add(d.pos(n), "%s: want true or false, got %s", label, kindName(n))
			return
		}
		v.SetBool(n.Value == "true" || n.Value == "True" || n.Value == "TRUE")
	case reflect.Int, reflect.Int64, reflect.Int32:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			d.ps.add(d.pos(n), "%s: want a whole number, got %s", label, kindName(n))
			return
		}
		i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, t.Bits())
		if err != nil {
			d.ps.add(d.pos(n), "%s: %q is out of range", label, n.Value)
			return
		}
		v.SetInt(i)
	default:
		d.ps.add(d.pos(n), "%s: unsupported field type %s", label, t)
	}
}

// structure decodes a mapping into a struct whose fields carry yaml tags.
func (d *decoder) structure(n *yaml.Node, v reflect.Value, what, label string) {
	if n.Kind != yaml.MappingNode {
		d.ps.add(d.pos(n), "%s: want a mapping, got %s", label, kindName(n))
		return
	}
	fields := map[string][]int{}
	var names []string
	var posFields [][]int
	collectFields(v.Type(), nil, fields, &names, &posFields)
	p := d.pos(n)
	p.keys = map[string]Pos{}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, c := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.ps.add(d.pos(k), "%s: keys must be strings", label)
			continue
		}
		idx, ok := fields[k.Value]
		if !ok {
			msg := fmt.Sprintf("%s: unknown key %q", label, k.Value)
			if s := closest(k.Value, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			} else {
				msg += " (known: " + strings.Join(names, ", ") + ")"
			}
			d.ps.add(d.pos(k), "%s", msg)
			continue
		}
		if seen[k.Value] {
			d.ps.add(d.pos(k), "%s: duplicate key %q", label, k.Value)
			continue
		}
		seen[k.Value] = true
		p.keys[k.Value] = d.pos(k)
		sub := k.Value
		if what != "" {
			sub = what + "." + k.Value
		}
		if d.paths != nil {
			d.paths[sub] = d.pos(k)
		}
		d.value(c, v.FieldByIndex(idx), sub)
	}
	for _, idx := range posFields {
		v.FieldByIndex(idx).Set(reflect.ValueOf(p))
	}
}

// collectFields lists the keys of struct type t by their yaml tags,
// descending into fields tagged ",inline", and the index paths of its Pos
// fields.
func collectFields(t reflect.Type, prefix []int, fields map[string][]int, names *[]string, posFields *[][]int) {
	for i := range t.NumField() {
		f := t.Field(i)
		idx := append(slices.Clone(prefix), i)
		if f.Type == posType && f.Name == "Pos" {
			*posFields = append(*posFields, idx)
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if opts == "inline" && f.Type.Kind() == reflect.Struct {
			collectFields(f.Type, idx, fields, names, posFields)
			continue
		}
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		fields[name] = idx
		*names = append(*names, name)
	}
}

// closest returns the name within edit distance 2 of s, if any.
func closest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
