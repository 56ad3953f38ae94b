package rules

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// maxPlanMapLine is the longest line of a plan map file, in bytes, and
// maxPlanMapJSON the largest JSON plan map file (read whole): a path such
// as /dev/zero is an error, not a process that reads forever.
const (
	maxPlanMapLine = 1 << 20
	maxPlanMapJSON = 256 << 20
)

// ParsePlanMap parses r, the contents of the plan map file name (a
// Tiers.MembersFile, which package config reads: rules opens no file):
// one "IDENTITY PLAN" pair per line, separated by spaces or tabs; blank
// lines and lines starting with '#' are ignored. A name ending in .json
// is instead a JSON object mapping identity to plan name, and nothing
// else. A repeated identity is an error, in either form. Errors name the
// file and the line (and, for JSON, the column), never the identity (it
// may be a secret). The map is never nil without an error.
func ParsePlanMap(name string, r io.Reader) (map[string]string, error) {
	return parsePlanMap(name, r, strings.HasSuffix(name, ".json"))
}

// parsePlanMap parses r, the contents of the plan map file name, as JSON
// or as lines of "IDENTITY PLAN".
func parsePlanMap(name string, r io.Reader, isJSON bool) (map[string]string, error) {
	if isJSON {
		data, err := readAtMost(r, maxPlanMapJSON)
		if err != nil {
			return nil, fmt.Errorf("%s:1:1: %w", name, err)
		}
		return parsePlanMapJSON(name, data)
	}
	m := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxPlanMapLine)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		fields := strings.Fields(s)
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want IDENTITY PLAN, found %d fields", name, line, len(fields))
		}
		if _, dup := m[fields[0]]; dup {
			return nil, fmt.Errorf("%s:%d: identity repeated", name, line)
		}
		m[fields[0]] = fields[1]
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: line longer than %d bytes", name, line+1, maxPlanMapLine)
		}
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	return m, nil
}

// readAtMost reads r to its end, or fails once it has given more than max
// bytes.
func readAtMost(r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err == nil && int64(len(data)) > max {
		err = fmt.Errorf("larger than %d bytes", max)
	}
	return data, err
}

// parsePlanMapJSON parses data as one JSON object whose values are
// strings, refusing repeated keys and anything after the object.
func parsePlanMapJSON(name string, data []byte) (map[string]string, error) {
	// at places a problem at byte offset off of data.
	at := func(off int64, format string, args ...any) error {
		line, col := lineCol(data, off)
		return fmt.Errorf("%s:%d:%d: %s", name, line, col, fmt.Sprintf(format, args...))
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, at(int64(len(data)), "want a JSON object mapping identity to plan, found nothing")
	}
	// The syntax first, whose errors carry the offset just past the byte
	// at fault (the streaming decoder's do not, reliably).
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off := se.Offset - 1
			if strings.Contains(se.Error(), "unexpected end") {
				off = int64(len(data))
			}
			return nil, at(off, "%s", se.Error())
		}
		return nil, at(0, "%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	// next returns the next token and the offset where it starts: past
	// the whitespace, colon or comma before it.
	next := func() (json.Token, int64, error) {
		off := dec.InputOffset()
		for off < int64(len(data)) && bytes.IndexByte([]byte(" \t\r\n:,"), data[off]) >= 0 {
			off++
		}
		tok, err := dec.Token()
		return tok, off, err
	}
	tok, off, err := next()
	switch {
	case err != nil:
		return nil, at(off, "%v", err) // cannot happen: the syntax is valid
	case tok != json.Delim('{'):
		return nil, at(off, "want a JSON object mapping identity to plan, found %s", jsonKind(tok))
	}
	m := map[string]string{}
	for dec.More() {
		tok, keyAt, err := next()
		if err != nil {
			return nil, at(keyAt, "%v", err)
		}
		id, _ := tok.(string) // an object's keys are strings
		tok, valueAt, err := next()
		if err != nil {
			return nil, at(valueAt, "%v", err)
		}
		plan, ok := tok.(string)
		if !ok {
			return nil, at(valueAt, "want a plan name (a string), found %s", jsonKind(tok))
		}
		if _, dup := m[id]; dup {
			return nil, at(keyAt, "identity repeated")
		}
		m[id] = plan
	}
	return m, nil
}

// jsonKind names the kind of a JSON token, never its text (a string may
// be an identity).
func jsonKind(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return "an object"
		case '[':
			return "a list"
		}
		return fmt.Sprintf("%q", t.String())
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a value"
}

// lineCol returns the line and column, from 1, of byte offset off in data.
func lineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}
