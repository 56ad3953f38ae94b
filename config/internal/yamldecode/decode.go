package yamldecode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/internal/yamlalias"
	"github.com/tollgate-dev/tollgate/limit"
	"go.yaml.in/yaml/v3"
)

// Decoder fills Go values from a YAML node tree strictly: every key must
// name a field, every value must have the field's type, and every problem is
// recorded rather than stopping at the first.
type Decoder struct {
	file string
	ps   *List
	// paths, when not nil, records the position of every value by its
	// path ("rules[2].policies[0].rate").
	paths map[string]Pos
	// failed holds the path of every value that failed to decode and was
	// left zero ("" for the whole document), and that of every field an
	// unknown key was probably meant to set: validation keeps quiet about
	// them (see [Decoder.Explains]).
	failed map[string]bool
}

var (
	durationType = reflect.TypeFor[time.Duration]()
)

// New returns a Decoder of the file named file (in positions), recording
// its problems in ps and the position of every value by its path.
func New(file string, ps *List) *Decoder {
	return &Decoder{file: file, ps: ps, paths: map[string]Pos{}}
}

// Decode decodes data, which must hold exactly one YAML document, into
// out (a pointer to a struct with yaml tags).
func (d *Decoder) Decode(data []byte, out any) { d.parseDocument(data, out) }

// Paths maps the path of every value decoded ("rules[2].policies[0].rate")
// to its position.
func (d *Decoder) Paths() map[string]Pos { return d.paths }

// Failed reports whether the value at path failed to decode and was left
// zero ("" for the whole document).
func (d *Decoder) Failed(path string) bool { return d.failed[path] }

func (d *Decoder) pos(n *yaml.Node) Pos { return Pos{File: d.file, Line: n.Line, Col: n.Column} }

// parseDocument decodes data, which must hold exactly one YAML document,
// into out (a pointer to a struct).
func (d *Decoder) parseDocument(data []byte, out any) {
	if d.failed == nil {
		d.failed = map[string]bool{}
	}
	// A file with no document is not a configuration of defaults: it is
	// most likely one truncated or caught mid-write, and loading it would
	// drop every route and rule.
	if len(bytes.TrimSpace(data)) == 0 {
		d.ps.Add(Pos{File: d.file}, "the file is empty: no configuration")
		d.failed[""] = true
		return
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		p, msg := syntaxError(d.file, data, err)
		d.ps.Add(p, "%s", msg)
		d.failed[""] = true
		return
	}
	// A second document ("---" then more keys) would be silently ignored:
	// the file is one document. An empty one (a trailing "---") holds
	// nothing to ignore.
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			p, msg := syntaxError(d.file, data, err)
			d.ps.Add(p, "%s", msg)
			break
		}
		if len(next.Content) == 0 || len(next.Content) == 1 && isNull(next.Content[0]) && next.Content[0].Value == "" {
			continue // empty: nothing to ignore
		}
		d.ps.Add(d.pos(&next), "a second YAML document: the configuration is one document")
		break
	}
	if doc.Kind == 0 || len(doc.Content) == 0 || isNull(doc.Content[0]) {
		d.ps.Add(Pos{File: d.file}, "the file holds no YAML document (only comments or null): no configuration")
		d.failed[""] = true
		return
	}
	// The node tree holds aliases unexpanded, and a small file whose
	// aliases refer to aliases expands exponentially as it is decoded
	// (the "billion laughs"): such a file is refused before decoding, at
	// the alias's line.
	if at, msg := yamlalias.Check(doc.Content[0]); at != nil {
		d.fail(at, "", "%s", msg)
		return
	}
	d.value(doc.Content[0], reflect.ValueOf(out).Elem(), "")
}

// fail records a problem with the value n at path what, which is left as it
// was (zero, unless partly decoded), so that validation keeps quiet about
// it.
func (d *Decoder) fail(n *yaml.Node, what, format string, args ...any) {
	d.ps.Add(d.pos(n), format, args...)
	d.failed[what] = true
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
// It follows an alias (parseDocument has bounded what they expand to),
// records where what is, then decodes by v's type (decodeTyped).
func (d *Decoder) value(n *yaml.Node, v reflect.Value, what string) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if d.paths != nil && what != "" {
		if _, ok := d.paths[what]; !ok {
			d.paths[what] = d.pos(n)
		}
	}
	label := what
	if label == "" {
		label = "the document"
	}
	if msg := tagProblem(n); msg != "" {
		d.fail(n, what, "%s: %s", label, msg)
		return
	}
	if isNull(n) {
		nullValue(n, v)
		return
	}
	d.decodeTyped(n, v, what, label)
}

// nullValue keeps v's zero value for a null n (defaults fill it), placed
// at the null, so that what validation finds missing in it has a line. A
// key left empty ("redis:" and nothing under it) where a mapping of
// settings goes is that mapping with nothing set, not the section left
// out: its required keys are reported missing rather than the section
// silently ignored. An explicit null (~, null) leaves it out.
func nullValue(n *yaml.Node, v reflect.Value) {
	if v.Kind() == reflect.Pointer && v.Type().Elem().Kind() == reflect.Struct && n.Value == "" && n.Style&yaml.TaggedStyle == 0 {
		v.Set(reflect.New(v.Type().Elem()))
	}
}

// decodeTyped decodes the non-null node n into v by v's type; label is
// what, or "the document" at the top.
func (d *Decoder) decodeTyped(n *yaml.Node, v reflect.Value, what, label string) {
	t := v.Type()
	switch {
	case t == durationType:
		d.duration(n, v, what, label)
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
		d.list(n, v, what, label)
	case reflect.Map:
		d.mapping(n, v, what, label)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.fail(n, what, "%s: want a string, got %s", label, kindName(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		d.boolean(n, v, what, label)
	case reflect.Int, reflect.Int64, reflect.Int32:
		d.integer(n, v, what, label)
	case reflect.Uint32:
		d.unsigned(n, v, what, label)
	default:
		d.fail(n, what, "%s: unsupported field type %s", label, t)
	}
}

// duration decodes a time.Duration written as Go writes one ("5s").
func (d *Decoder) duration(n *yaml.Node, v reflect.Value, what, label string) {
	if n.Kind != yaml.ScalarNode {
		d.fail(n, what, "%s: want a duration such as 5s, got %s", label, kindName(n))
		return
	}
	dur, err := time.ParseDuration(n.Value)
	if err != nil || dur < 0 {
		d.fail(n, what, "%s: %q is not a duration such as 500ms, 5s or 1m", label, n.Value)
		return
	}
	v.SetInt(int64(dur))
}

// list decodes a sequence into a slice; a single string where a list of
// strings is expected is that list of one ("key: ip" is "key: [ip]").
func (d *Decoder) list(n *yaml.Node, v reflect.Value, what, label string) {
	t := v.Type()
	if n.Kind == yaml.ScalarNode && t.Elem().Kind() == reflect.String {
		s := reflect.MakeSlice(t, 1, 1)
		d.value(n, s.Index(0), what+"[0]")
		v.Set(s)
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(n, what, "%s: want a list, got %s", label, kindName(n))
		return
	}
	s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
	for i, c := range n.Content {
		d.value(c, s.Index(i), fmt.Sprintf("%s[%d]", what, i))
	}
	v.Set(s)
}

// mapping decodes a mapping into a map keyed by string, a duplicate key
// reported at its second occurrence.
func (d *Decoder) mapping(n *yaml.Node, v reflect.Value, what, label string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, what, "%s: want a mapping, got %s", label, kindName(n))
		return
	}
	t := v.Type()
	m := reflect.MakeMapWithSize(t, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, c := n.Content[i], n.Content[i+1]
		if !d.key(k, label) {
			continue
		}
		if m.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
			d.ps.Add(d.pos(k), "%s: duplicate key %q", label, k.Value)
			continue
		}
		e := reflect.New(t.Elem()).Elem()
		d.value(c, e, what+"."+k.Value)
		m.SetMapIndex(reflect.ValueOf(k.Value), e)
	}
	v.Set(m)
}

// boolean decodes only YAML 1.2's booleans, even under an explicit !!bool
// tag: "!!bool yes" is not read as false.
func (d *Decoder) boolean(n *yaml.Node, v reflect.Value, what, label string) {
	b, ok := boolValues[n.Value]
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || !ok {
		d.fail(n, what, "%s: want true or false, got %s", label, kindName(n))
		return
	}
	v.SetBool(b)
}

// integer decodes a whole number (YAML 1.2's forms, '_' separators
// allowed) that fits v's bits.
func (d *Decoder) integer(n *yaml.Node, v reflect.Value, what, label string) {
	bits := v.Type().Bits()
	if n.Kind == yaml.ScalarNode && n.Tag == "!!float" {
		d.fail(n, what, "%s: %s", label, notWhole(n.Value, bits))
		return
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		d.fail(n, what, "%s: want a whole number, got %s", label, kindName(n))
		return
	}
	i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, bits)
	if err != nil {
		d.fail(n, what, "%s: %s", label, outOfRange(n.Value, bits))
		return
	}
	v.SetInt(i)
}

// unsigned decodes a whole number from 0 that fits v's bits (an AS
// number, a uint32).
func (d *Decoder) unsigned(n *yaml.Node, v reflect.Value, what, label string) {
	bits := v.Type().Bits()
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		d.fail(n, what, "%s: want a whole number from 0, got %s", label, kindName(n))
		return
	}
	u, err := strconv.ParseUint(strings.ReplaceAll(n.Value, "_", ""), 0, bits)
	if err != nil {
		if strings.HasPrefix(n.Value, "-") {
			d.fail(n, what, "%s: %s must not be negative", label, n.Value)
		} else {
			d.fail(n, what, "%s: %s is too large (the largest is %d)", label, n.Value, uint64(1)<<bits-1)
		}
		return
	}
	v.SetUint(u)
}

// notWhole says why the YAML number s (a !!float: "1.5", "1e3", ".inf",
// or an integer too long for int64, which YAML reads as a float) is not a
// whole number of bits bits.
func notWhole(s string, bits int) string {
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		switch strings.ToLower(strings.TrimLeft(s, "+-")) {
		case ".inf":
			return outOfRange(s, bits)
		}
		return fmt.Sprintf("%q is not a number", s)
	case math.Abs(f) >= math.Ldexp(1, bits-1):
		return outOfRange(s, bits)
	case f != math.Trunc(f):
		return fmt.Sprintf("%s is not a whole number", s)
	}
	return fmt.Sprintf("want a whole number written in digits, got %s", s)
}

// outOfRange says that the integer s does not fit in bits bits.
func outOfRange(s string, bits int) string {
	if strings.HasPrefix(s, "-") {
		return fmt.Sprintf("%s is too small (the least is %d)", s, int64(-1)<<(bits-1))
	}
	return fmt.Sprintf("%s is too large (the largest is %d)", s, int64(uint64(1)<<(bits-1)-1))
}

// boolValues are the booleans of YAML 1.2's core schema, the only ones a
// boolean field takes.
var boolValues = map[string]bool{
	"true": true, "True": true, "TRUE": true,
	"false": false, "False": false, "FALSE": false,
}

// key reports whether k can be a mapping key, recording a problem when it
// cannot.
func (d *Decoder) key(k *yaml.Node, label string) bool {
	if k.Kind != yaml.ScalarNode {
		d.ps.Add(d.pos(k), "%s: keys must be strings", label)
		return false
	}
	if msg := tagProblem(k); msg != "" {
		d.ps.Add(d.pos(k), "%s: key %q: %s", label, k.Value, msg)
		return false
	}
	return true
}

// tagProblem returns what is wrong with n's explicit tag, or "". Scalars
// take only the tags of YAML's core schema (!!str, !!int, !!float, !!bool
// and !!null), and only on a value of that type, mappings only !!map and
// lists only !!seq: any other tag (!!binary, !!timestamp, a local !custom)
// asks for a conversion the decoder does not make, and reading the text
// as is would be wrong.
func tagProblem(n *yaml.Node) string {
	if n.Style&yaml.TaggedStyle == 0 {
		return "" // implicit: resolved from the value
	}
	switch n.Kind {
	case yaml.MappingNode:
		if n.Tag != "!!map" {
			return fmt.Sprintf("the tag %s is not supported on a mapping", n.Tag)
		}
		return ""
	case yaml.SequenceNode:
		if n.Tag != "!!seq" {
			return fmt.Sprintf("the tag %s is not supported on a list", n.Tag)
		}
		return ""
	case yaml.ScalarNode:
	default:
		return ""
	}
	ok := true
	switch n.Tag {
	case "!!str":
	case "!!int":
		_, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
		ok = err == nil
	case "!!float":
		_, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		ok = err == nil || slices.Contains([]string{".inf", "+.inf", "-.inf", ".nan", ".Inf", "+.Inf", "-.Inf", ".NaN", ".INF", "+.INF", "-.INF", ".NAN"}, n.Value)
	case "!!bool":
		_, ok = boolValues[n.Value]
	case "!!null":
		ok = slices.Contains([]string{"", "~", "null", "Null", "NULL"}, n.Value)
	default:
		return fmt.Sprintf("the tag %s is not supported (only !!str, !!int, !!float, !!bool and !!null)", n.Tag)
	}
	if !ok {
		return fmt.Sprintf("%q is not a valid %s", n.Value, n.Tag)
	}
	return ""
}

// structure decodes a mapping into a struct whose fields carry yaml tags.
func (d *Decoder) structure(n *yaml.Node, v reflect.Value, what, label string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, what, "%s: want a mapping, got %s", label, kindName(n))
		return
	}
	fields := map[string][]int{}
	var names []string
	collectFields(v.Type(), nil, fields, &names)
	seen := map[string]bool{}
	var meant []string // the fields misspelled keys were probably meant to set
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, c := n.Content[i], n.Content[i+1]
		if !d.key(k, label) {
			continue
		}
		idx, ok := fields[k.Value]
		if !ok {
			msg := fmt.Sprintf("%s: unknown key %q", label, k.Value)
			if s := limit.Closest(k.Value, names...); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
				meant = append(meant, s)
			} else {
				msg += " (known: " + strings.Join(names, ", ") + ")"
			}
			d.ps.Add(d.pos(k), "%s", msg)
			continue
		}
		if seen[k.Value] {
			d.ps.Add(d.pos(k), "%s: duplicate key %q", label, k.Value)
			continue
		}
		seen[k.Value] = true
		sub := join(what, k.Value)
		if d.paths != nil {
			d.paths[sub] = d.pos(k)
		}
		d.value(c, v.FieldByIndex(idx), sub)
	}
	// A field left unset because its key was misspelled is not also
	// "required" ("upstrem: ..." then "upstream is required").
	for _, name := range meant {
		if !seen[name] {
			d.failed[join(what, name)] = true
		}
	}
}

// join returns the path of the key named key in the mapping at path what.
func join(what, key string) string {
	if what == "" {
		return key
	}
	return what + "." + key
}

// Explains reports whether a validation problem, whose message starts with
// the path of its subject ("rules[0].policies[0]: ...", "store.redis.url
// is required"), follows from a value that failed to decode: its subject is
// that value or lies under it, or its subject contains that value and the
// message names it ("rules[0]: no policies" when policies failed), or the
// message names the failed value's whole path ("needs store.redis" when
// store failed).
func (d *Decoder) Explains(msg string) bool {
	subject := msg
	if i := strings.IndexAny(msg, ": "); i >= 0 {
		subject = msg[:i]
	}
	rest := msg[len(subject):]
	for f := range d.failed {
		if under(subject, f) || mentions(msg, f) {
			return true
		}
		if derivedName(subject, msg, f) {
			return true
		}
		if under(f, subject) && !strings.HasSuffix(f, "]") {
			// Only a whole field: a failed element (policies[0]) does
			// not explain a message about the field (policies and
			// tiers both set).
			name := f[strings.LastIndexByte(f, '.')+1:]
			if i := strings.IndexByte(name, '['); i >= 0 {
				name = name[:i]
			}
			if name != "" && mentions(rest, name) {
				return true
			}
		}
	}
	return false
}

// derivedName reports a problem with a name that follows from the name
// at failed path f not decoding: a policy's default name is its rule's,
// so an undecoded rule name leaves its policies unnamed (""); and an
// undecoded name defaulted may then clash with a sibling's ("duplicate").
func derivedName(subject, msg, f string) bool {
	elem, ok := strings.CutSuffix(f, ".name")
	if !ok || !strings.HasSuffix(subject, ".name") {
		return false
	}
	if under(subject, elem) && strings.Contains(msg, `""`) {
		return true
	}
	// A policy whose name failed takes its rule's name, which may clash
	// with a sibling policy's. (A rule whose name failed is skipped by the
	// duplicate check, so no rule-list clash follows from it.)
	i := strings.LastIndex(elem, ".policies[")
	if i < 0 {
		return false
	}
	return under(subject, elem[:i+len(".policies")]) && strings.Contains(msg, "duplicate")
}

// under reports whether path p is path q or lies under it ("" is the
// whole document).
func under(p, q string) bool {
	if q == "" {
		return true
	}
	return p == q || strings.HasPrefix(p, q) && (p[len(q)] == '.' || p[len(q)] == '[')
}

// mentions reports whether s holds word as a whole word (not inside a
// longer name).
func mentions(s, word string) bool {
	isName := func(b byte) bool {
		return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
	}
	for i := 0; ; {
		j := strings.Index(s[i:], word)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(word)
		if (j == 0 || !isName(s[j-1])) && (end == len(s) || !isName(s[end])) {
			return true
		}
		i = j + 1
	}
}

// collectFields lists the keys of struct type t by their yaml tags,
// descending into fields tagged ",inline".
func collectFields(t reflect.Type, prefix []int, fields map[string][]int, names *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		idx := append(slices.Clone(prefix), i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if opts == "inline" && f.Type.Kind() == reflect.Struct {
			collectFields(f.Type, idx, fields, names)
			continue
		}
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		fields[name] = idx
		*names = append(*names, name)
	}
}
