package envoyrls

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-dev/tollgate/internal/yamlalias"
	"github.com/tollgate-dev/tollgate/limit"
)

// Problem is one thing wrong with a configuration file, at its line and
// column (zero when the file as a whole is wrong). Its message is
// envoyproxy/ratelimit's for the same mistake where it has one.
type Problem struct {
	File         string
	Line, Column int
	Msg          string
}

// Error returns "file:line:col: msg", or "file: msg" without a position.
func (p *Problem) Error() string {
	if p.Line == 0 {
		return p.File + ": " + p.Msg
	}
	return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Column, p.Msg)
}

// Problems returns the problems in err, an error from Build or LoadDir,
// in the order found.
func Problems(err error) []*Problem {
	var out []*Problem
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var p *Problem
		if errors.As(e, &p) {
			out = append(out, p)
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}

// Source is one configuration file's name and contents.
type Source struct {
	Name string
	Data []byte
}

// errCount refuses a key asking to count on the answer (tollgate's
// rules.Rule.Count), by name rather than as one more unknown key: a rate
// limit service is asked before the request is proxied and never told
// the answer.
const errCount = "config error, key '%s': counting on the answer is not possible in a rate limit service " +
	"(Envoy asks before the request is proxied and never reports the upstream's answer); " +
	"count where the request is served (tollgate serve's rules[].count)"

// ExtAlgorithm is tollgate's extension key, beside unit and
// requests_per_unit in a rate_limit: the algorithm deciding the limit
// (fixed_window, sliding_window, sliding_log, token_bucket,
// leaky_bucket). envoyproxy/ratelimit refuses a file that has it, so a
// file using it is tollgate's only.
const ExtAlgorithm = "tollgate_algorithm"

// validKeys are the keys envoyproxy/ratelimit accepts, anywhere in a file
// (config_impl.go validKeys).
var validKeys = map[string]bool{
	"domain": true, "key": true, "value": true, "descriptors": true,
	"rate_limit": true, "unit": true, "requests_per_unit": true,
	"unlimited": true, "shadow_mode": true, "quota_mode": true,
	"name": true, "replaces": true, "detailed_metric": true,
	"value_to_metric": true, "share_threshold": true,
}

// Options are the choices a configuration is loaded with.
type Options struct {
	// MergeDomains lets several files hold one domain, their descriptors
	// merged (a composite key twice is still an error), as
	// envoyproxy/ratelimit's MERGE_DOMAIN_CONFIG=true. False refuses a
	// domain's second file.
	MergeDomains bool
	// DotFiles reads the files and directories whose name starts with
	// '.' too, as envoyproxy/ratelimit does unless
	// RUNTIME_IGNOREDOTFILES=true. False skips them (editors' swap and
	// temporary files; Kubernetes' ..data and ..timestamp directories).
	DotFiles bool
}

// Build builds the Limits of the files given, in order: each holds one
// domain, and two files with the same domain are an error. It returns
// every problem found, joined; a file with problems adds no domain.
func Build(files []Source) (*Limits, error) { return BuildWith(files, Options{}) }

// BuildWith is Build with the options o.
func BuildWith(files []Source, o Options) (*Limits, error) {
	l := &Limits{domains: make(map[string]*node)}
	from := make(map[string]string)
	var errs []error
	for _, f := range files {
		l.Files = append(l.Files, f.Name)
		p := &parser{file: f.Name}
		domain, root, line := p.parse(f.Data)
		if len(p.errs) > 0 {
			errs = append(errs, p.errs...)
			continue
		}
		if prev, dup := from[domain]; dup {
			if !o.MergeDomains {
				errs = append(errs, &Problem{File: f.Name, Line: line, Column: 1,
					Msg: fmt.Sprintf("duplicate domain '%s' in config file (first in %s)", domain, prev)})
				continue
			}
			if err := merge(l.domains[domain], root, domain, f.Name, line); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		from[domain] = f.Name
		l.domains[domain] = root
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return l, nil
}

// merge adds the descriptors of a domain's further file, root, to the
// domain's tree into, as envoyproxy/ratelimit patches a domain: a
// composite key both have is an error, wildcards keep their file order.
func merge(into, root *node, domain, file string, line int) error {
	for k := range root.children {
		if _, dup := into.children[k]; dup {
			return &Problem{File: file, Line: line, Column: 1,
				Msg: fmt.Sprintf("duplicate descriptor composite key '%s.%s'", domain, k)}
		}
	}
	for k, c := range root.children {
		into.children[k] = c
	}
	into.wildcards = append(into.wildcards, root.wildcards...)
	return nil
}

// parser reads one file.
type parser struct {
	file   string
	errs   []error
	visits int // nodes walked, bounded by maxVisits against alias bombs
}

// maxDepth and maxVisits bound the walk of one file: nesting deeper than
// envoyproxy/ratelimit's configurations ever go, and aliases expanding a
// small file into a huge tree.
const (
	maxDepth  = 64
	maxVisits = 1 << 20
)

// enter counts a node walked at depth and reports whether to go on.
func (p *parser) enter(n *yaml.Node, depth int) bool {
	p.visits++
	if depth > maxDepth {
		p.errorf(n, "nested more than %d levels deep", maxDepth)
		return false
	}
	if p.visits > maxVisits {
		if p.visits == maxVisits+1 {
			p.errorf(n, "more than %d nodes (aliases expanding too far?)", maxVisits)
		}
		return false
	}
	return true
}

func (p *parser) errorf(n *yaml.Node, format string, args ...any) {
	pr := &Problem{File: p.file, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		pr.Line, pr.Column = n.Line, n.Column
	}
	p.errs = append(p.errs, pr)
}

// parse reads a file: its domain, its descriptor tree, and the line of
// its domain key.
func (p *parser) parse(data []byte) (string, *node, int) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p.errs = append(p.errs, &Problem{File: p.file, Line: yamlErrorLine(err), Msg: "error loading config file: " + err.Error()})
		return "", nil, 0
	}
	if at, msg := yamlalias.Check(&doc); at != nil {
		p.errorf(at, "error loading config file: %s", msg)
		return "", nil, 0
	}
	var m *yaml.Node
	if len(doc.Content) > 0 {
		m = resolve(doc.Content[0])
	}
	if m != nil && m.Kind == yaml.ScalarNode && m.Tag == "!!null" {
		m = nil
	}
	if m != nil && m.Kind != yaml.MappingNode {
		p.errorf(m, "error loading config file: the file is a %s, not a mapping", kindName(m))
		return "", nil, 0
	}
	if m != nil {
		p.checkKeys(m, false, 0)
		if len(p.errs) > 0 {
			return "", nil, 0
		}
	}
	domain, line := "", 0
	var descs *yaml.Node
	if m != nil {
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], resolve(m.Content[i+1])
			switch k.Value {
			case "domain":
				domain, line = p.str(v), k.Line
			case "descriptors":
				descs = v
			default:
				p.errorf(k, "config error, unknown key '%s' at the top level", k.Value)
			}
		}
	}
	if domain == "" {
		p.errorf(m, "config file cannot have empty domain")
		return "", nil, 0
	}
	root := &node{children: make(map[string]*node)}
	p.descriptors(root, domain, "", descs, 0)
	return domain, root, line
}

// checkKeys is envoyproxy/ratelimit's validateYamlKeys: every mapping key
// is a known string, every list holds mappings, every leaf a string, an
// integer, a boolean or null. A rate_limit mapping may also hold ExtAlgorithm.
func (p *parser) checkKeys(m *yaml.Node, rateLimit bool, depth int) {
	if !p.enter(m, depth) {
		return
	}
	seen := make(map[string]bool, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := resolve(m.Content[i]), resolve(m.Content[i+1])
		if k.Kind != yaml.ScalarNode || (k.Tag != "!!str" && k.Tag != "") {
			p.errorf(k, "config error, key is not of type string: %v", k.Value)
			continue
		}
		if k.Value == "count" || k.Value == "tollgate_count" {
			p.errorf(k, errCount, k.Value)
			continue
		}
		if !validKeys[k.Value] && !(rateLimit && k.Value == ExtAlgorithm) {
			p.errorf(k, "config error, unknown key '%s'", k.Value)
			continue
		}
		if seen[k.Value] {
			p.errorf(k, "config error, key '%s' appears twice", k.Value)
			continue
		}
		seen[k.Value] = true
		switch v.Kind {
		case yaml.ScalarNode:
			// envoyproxy/ratelimit's leaves are strings, integers,
			// booleans and null: anything else (a float, 1.5 as a
			// requests_per_unit) is its "error checking config".
			if v.Tag == "!!float" {
				p.errorf(v, "error checking config (%s: %s is not a string, an integer or a boolean)", k.Value, v.Value)
			}
		case yaml.SequenceNode:
			for _, e := range v.Content {
				e = resolve(e)
				if e.Kind != yaml.MappingNode {
					p.errorf(e, "config error, yaml file contains list of type other than map: %v", e.Value)
					continue
				}
				p.checkKeys(e, false, depth+1)
			}
		case yaml.MappingNode:
			p.checkKeys(v, k.Value == "rate_limit", depth+1)
		}
	}
}

// descriptors loads the descriptors in list under parent, whose path is
// prefix (empty at the domain).
func (p *parser) descriptors(parent *node, domain, prefix string, list *yaml.Node, depth int) {
	if list == nil || !p.enter(list, depth) || list.Tag == "!!null" {
		return
	}
	if list.Kind != yaml.SequenceNode {
		p.errorf(list, "descriptors must be a list, not a %s", kindName(list))
		return
	}
	for _, d := range list.Content {
		p.descriptor(parent, domain, prefix, resolve(d), depth)
	}
}

func (p *parser) descriptor(parent *node, domain, prefix string, d *yaml.Node, depth int) {
	var key, value string
	var rl, children *yaml.Node
	var shadow, quota, detailed, toMetric, share bool
	for i := 0; i+1 < len(d.Content); i += 2 {
		k, v := d.Content[i], resolve(d.Content[i+1])
		switch k.Value {
		case "key":
			key = p.str(v)
		case "value":
			value = p.str(v)
		case "rate_limit":
			rl = v
		case "descriptors":
			children = v
		case "shadow_mode":
			shadow = p.bool(v)
		case "quota_mode":
			quota = p.bool(v)
		case "detailed_metric":
			detailed = p.bool(v)
		case "value_to_metric":
			toMetric = p.bool(v)
		case "share_threshold":
			share = p.bool(v)
		default:
			p.errorf(k, "config error, unknown key '%s' in a descriptor", k.Value)
		}
	}
	if key == "" {
		p.errorf(d, "descriptor has empty key")
		return
	}
	final := key
	if value != "" {
		final += "_" + value
	}
	path := prefix + final
	if _, dup := parent.children[final]; dup {
		p.errorf(d, "duplicate descriptor composite key '%s.%s'", domain, path)
		return
	}
	n := &node{children: make(map[string]*node), valueToMetric: toMetric, shareThreshold: share}
	if rl != nil && rl.Tag != "!!null" {
		n.limit = p.rateLimit(rl, domain, path)
		if n.limit != nil {
			n.limit.prepare()
		}
		if n.limit != nil {
			n.limit.ShadowMode, n.limit.QuotaMode, n.limit.DetailedMetric = shadow, quota, detailed
			n.limit.Line = d.Line
		}
	}
	// Only a trailing '*' is a wildcard, as in envoyproxy/ratelimit: the
	// value is a prefix. A '*' elsewhere is a plain character.
	wild := strings.HasSuffix(final, "*")
	if share {
		if !wild {
			p.errorf(d, "share_threshold can only be used with wildcard values (ending with '*'), but found key '%s'", final)
		}
		n.pattern = final
	}
	if wild {
		parent.wildcards = append(parent.wildcards, wildcard{key: final, prefix: strings.TrimSuffix(final, "*")})
	}
	p.descriptors(n, domain, path+".", children, depth+1)
	parent.children[final] = n
}

// rateLimit loads a rate_limit mapping.
func (p *parser) rateLimit(m *yaml.Node, domain, path string) *Limit {
	if m.Kind != yaml.MappingNode {
		p.errorf(m, "rate_limit must be a mapping, not a %s", kindName(m))
		return nil
	}
	l := &Limit{Path: path, Domain: domain, File: p.file}
	var unitNode, algNode *yaml.Node
	var unitName, algName string
	var replNodes []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], resolve(m.Content[i+1])
		switch k.Value {
		case "unit":
			unitNode, unitName = v, p.str(v)
		case "requests_per_unit":
			if v.Tag != "!!null" {
				if err := v.Decode(&l.RequestsPerUnit); err != nil {
					p.errorf(v, "requests_per_unit: %q is not a whole number from 0 to 4294967295", v.Value)
				}
			}
		case "unlimited":
			l.Unlimited = p.bool(v)
		case "name":
			l.Name = p.str(v)
		case "replaces":
			l.Replaces, replNodes = p.replaces(v)
		case ExtAlgorithm:
			algNode, algName = v, p.str(v)
		default:
			p.errorf(k, "config error, unknown key '%s' in a rate_limit", k.Value)
		}
	}
	unit, validUnit := parseUnit(unitName)
	if l.Unlimited {
		if validUnit {
			p.errorf(unitNode, "should not specify rate limit unit when unlimited")
		}
	} else if !validUnit {
		at := unitNode
		if at == nil {
			at = m
		}
		p.errorf(at, "invalid rate limit unit '%s'", unitName)
	}
	for i, r := range l.Replaces {
		if r == "" {
			p.errorf(replNodes[i], "should not have an empty replaces entry")
		} else if r == l.Name {
			p.errorf(replNodes[i], "replaces should not contain name of same descriptor")
		}
	}
	alg := limit.AlgFixedWindow
	if algNode != nil {
		a, err := limit.ParseAlgorithm(algName)
		if err != nil {
			p.errorf(algNode, "%s: %v", ExtAlgorithm, err)
		}
		alg = a
	}
	if l.Unlimited || !validUnit || alg == 0 {
		return l
	}
	l.Unit = unit
	if l.RequestsPerUnit > 0 {
		pol, err := policyFor(alg, l.RequestsPerUnit, unitLength(unit))
		if err != nil {
			p.errorf(m, "%v", err)
			return l
		}
		l.Policy = pol
	}
	return l
}

func (p *parser) replaces(v *yaml.Node) ([]string, []*yaml.Node) {
	if v.Kind != yaml.SequenceNode {
		p.errorf(v, "replaces must be a list of {name: ...}, not a %s", kindName(v))
		return nil, nil
	}
	out := make([]string, 0, len(v.Content))
	nodes := make([]*yaml.Node, 0, len(v.Content))
	for _, e := range v.Content {
		e = resolve(e)
		name := ""
		for i := 0; i+1 < len(e.Content); i += 2 {
			if e.Content[i].Value == "name" {
				name = p.str(resolve(e.Content[i+1]))
			} else {
				p.errorf(e.Content[i], "config error, unknown key '%s' in a replaces entry", e.Content[i].Value)
			}
		}
		out = append(out, name)
		nodes = append(nodes, e)
	}
	return out, nodes
}

// str is a scalar's text; null is "". A mapping or list is an error.
func (p *parser) str(v *yaml.Node) string {
	if v.Kind != yaml.ScalarNode {
		p.errorf(v, "expected a string, found a %s", kindName(v))
		return ""
	}
	if v.Tag == "!!null" {
		return ""
	}
	return v.Value
}

// bool is a boolean scalar; null is false.
func (p *parser) bool(v *yaml.Node) bool {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return false
	}
	var b bool
	if v.Kind != yaml.ScalarNode || v.Decode(&b) != nil {
		p.errorf(v, "expected true or false, found %q", v.Value)
	}
	return b
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "scalar"
	}
	return "node"
}

// yamlErrorLine is the line a YAML syntax error names, or 0.
func yamlErrorLine(err error) int {
	var line int
	if _, e := fmt.Sscanf(strings.TrimPrefix(err.Error(), "yaml: "), "line %d:", &line); e != nil {
		return 0
	}
	return line
}
