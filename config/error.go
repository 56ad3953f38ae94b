package config

import "github.com/tollgate-dev/tollgate/config/internal/yamldecode"

// Pos is a position in a configuration file. Lines and columns start at 1;
// the zero Pos means "no position" (a default, or a problem with the file as
// a whole).
type Pos = yamldecode.Pos

// Error is one problem in a configuration file, at a position; its Error
// is "file:line:col: message".
type Error = yamldecode.Error

// problems collects every error found in one file.
type problems = yamldecode.List

// Problems returns the individual errors inside an error returned by Load
// or Parse, in file order.
func Problems(err error) []*Error { return yamldecode.Problems(err) }

// Position returns the position in the file of the value at path, a
// rule path such as "rules[2].match.ja4" (the nearest enclosing value's
// when that one has none recorded; the file's when none is), to place a
// problem a caller finds in a loaded Config.
func (c *Config) Position(path string) Pos { return c.at(path) }
