// Package yamlalias bounds what the aliases of a parsed YAML tree expand
// to. A yaml.Node tree holds aliases unexpanded, and a small file whose
// aliases refer to anchors holding aliases expands exponentially once
// walked (the "billion laughs"): a 100-byte file can stand for 2^64
// nodes, and an alias inside its own anchor for infinitely many. Check
// measures the expansion in one pass over the tree as parsed, before
// anything walks it, so that the config loader (package config) and
// envoy-rls's (package envoyrls) refuse such a file at once, at an
// alias's line, by one rule.
package yamlalias

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// The budget of a tree is Factor nodes per node of the tree as parsed
// plus Slack: a file may stand for twenty times its size, and a small
// file's anchors for Slack nodes in all. Ordinary reuse (500 rules
// sharing one match of 100 path prefixes: 51,000 nodes from 4,600) stays
// inside it, and what a file expands to grows only linearly with its
// size: walking the budget of a fuzzer's kilobyte takes a millisecond.
const (
	Factor = 20
	Slack  = 10_000
)

// Check returns nil if the tree under root, its aliases expanded, has at
// most Budget(root) nodes and no alias inside the node it refers to.
// Otherwise it returns the alias at fault (the one whose expansion
// passed the budget, or the recursive one) and what is wrong, for the
// caller to report at the alias's line and column.
func Check(root *yaml.Node) (at *yaml.Node, msg string) {
	if root == nil {
		return nil, ""
	}
	c := checker{limit: Budget(root), size: make(map[*yaml.Node]int)}
	c.expand(root)
	return c.at, c.msg
}

// Budget is the number of nodes the tree under root may expand to:
// Factor per node as parsed (each alias counted once) plus Slack.
func Budget(root *yaml.Node) int { return Factor*count(root) + Slack }

// count returns the number of nodes under n, aliases unexpanded.
func count(n *yaml.Node) int {
	c := 1
	for _, x := range n.Content {
		c += count(x)
	}
	return c
}

// checker memoizes each node's expanded size, so that a tree is
// measured in time linear in its parsed size however far it expands.
type checker struct {
	limit int
	// size is a node's expanded size (at most limit+1), or -1 while its
	// children are being measured: an alias reaching such a node is
	// inside it.
	size map[*yaml.Node]int
	last *yaml.Node // the alias expanded last, in document order
	at   *yaml.Node
	msg  string
}

// expand returns the expanded size of n, saturated at limit+1, and
// records the fault once one is found.
func (c *checker) expand(n *yaml.Node) int {
	if c.at != nil {
		return 0
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		s, ok := c.size[n.Alias]
		switch {
		case ok && s < 0:
			c.at, c.msg = n, "the alias refers to a node it is part of: it would expand without end"
			return 0
		case !ok:
			s = c.expand(n.Alias)
		}
		c.last = n
		return c.add(1, s)
	}
	if s, ok := c.size[n]; ok && s >= 0 {
		return s
	}
	c.size[n] = -1
	total := 1
	for _, x := range n.Content {
		total = c.add(total, c.expand(x))
	}
	c.size[n] = total
	return total
}

// add returns a+b saturated at limit+1, recording the fault (at the
// alias expanded last: without aliases no tree passes its budget) when
// the sum passes the limit.
func (c *checker) add(a, b int) int {
	s := a + b
	if s <= c.limit {
		return s
	}
	if c.at == nil {
		c.at = c.last
		c.msg = fmt.Sprintf("aliases expand past %d nodes: use fewer aliases, or aliases of smaller parts", c.limit)
	}
	return c.limit + 1
}
