package yamldecode

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Pos is a position in a configuration file. Lines and columns start at 1;
// the zero Pos means "no position" (a default, or a problem with the file as
// a whole).
type Pos struct {
	File      string
	Line, Col int
}

// String returns "file:line:col", "file" or "".
func (p Pos) String() string {
	switch {
	case p.Line > 0:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
	default:
		return p.File
	}
}

// Error is one problem in a configuration file, at a position.
type Error struct {
	Pos Pos
	Msg string
}

// Error returns "file:line:col: message".
func (e *Error) Error() string {
	if s := e.Pos.String(); s != "" {
		return s + ": " + e.Msg
	}
	return e.Msg
}

// List collects every error found in one file.
type List struct{ Items []*Error }

// Add records a problem at p.
func (ps *List) Add(p Pos, format string, args ...any) {
	ps.Items = append(ps.Items, &Error{Pos: p, Msg: fmt.Sprintf(format, args...)})
}

// Err returns the problems sorted by position (stably: on one position,
// in the order they were added) and joined, or nil.
func (ps *List) Err() error {
	if len(ps.Items) == 0 {
		return nil
	}
	slices.SortStableFunc(ps.Items, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Pos.Line, b.Pos.Line), cmp.Compare(a.Pos.Col, b.Pos.Col))
	})
	errs := make([]error, len(ps.Items))
	for i, e := range ps.Items {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// Problems returns the individual errors inside an error a List made
// (config.Load and Parse return them), in file order.
func Problems(err error) []*Error {
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		var e *Error
		if errors.As(err, &e) && e == err {
			out = append(out, e)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		if err != nil {
			out = append(out, &Error{Msg: err.Error()})
		}
	}
	walk(err)
	return out
}
