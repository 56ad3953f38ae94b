package accesslog

import (
	"bytes"
	"errors"
)

// Parser reads the lines of one format into Records. A Parser keeps
// state between lines (a CSV header, a time cache, decoding buffers): one
// per input, used by one goroutine.
type Parser interface {
	// Parse reads line, without its line ending, into r, which the
	// caller has Reset. It returns one of the errors below for a line it
	// cannot read, and does not allocate for one it can (beyond growing
	// its buffers on the first long lines).
	Parse(line []byte, r *Record) error
	// FieldNames lists the names of line's fields (a JSON line's, the
	// CSV header's columns), at most 32, to say which were there when
	// none was the timestamp; nil for the combined format.
	FieldNames(line []byte) []string
}

// NewParser returns a Parser of format f (FormatAuto reads the combined
// format: detect the format first, with DetectFormat), its JSON fields or
// CSV columns named by fields (zero: DefaultFields).
func NewParser(f Format, fields Fields) Parser {
	switch f {
	case FormatJSON:
		return newJSONParser(fields)
	case FormatCSV:
		return newCSVParser(fields)
	}
	return &clfParser{}
}

// The errors of a line a Parser cannot read: sentinel values, so that a
// malformed line costs no allocation.
var (
	// ErrSyntax is a line that does not match the format.
	ErrSyntax = errors.New("line does not match the format")
	// ErrNoTime is a JSON or CSV line without a timestamp field.
	ErrNoTime = errors.New("no timestamp field")
	// ErrTime is a timestamp none of the time parsers understood, or
	// one outside the int64 nanosecond range (1677 to 2262).
	ErrTime = errors.New("bad timestamp")
	// ErrBadCost is a cost that is not a whole number from 0 to MaxCost.
	ErrBadCost = errors.New("bad cost")
	// ErrHeader marks a CSV header line: skipped, not malformed.
	ErrHeader = errors.New("header")
)

func indexByte(b []byte, c byte) int { return bytes.IndexByte(b, c) }
